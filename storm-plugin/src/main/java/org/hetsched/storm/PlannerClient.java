package org.hetsched.storm;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.net.ConnectException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Talks to the planning service (docs/api.md): {@code POST /v1/plans}, {@code GET /v1/plans/{id}} and
 * {@code GET /v1/profiles/{name}}.
 *
 * <p>Every call is bounded by one time budget covering connect, request and answer, so a slow
 * planner costs a Nimbus round at most that long. Every failure becomes a {@link PlanFault} whose
 * reason says what went wrong in one line.
 */
public final class PlannerClient {
    private static final int MAX_DETAIL_CHARS = 300;
    private static final String BASE_LOAD = "machine_base_load";
    /** The service's code for a request whose profiles lack pairs it needs (planner/service/errors.py). */
    static final String PROFILE_MISSING = "profile_missing";
    /** The calls whose body names a profile set: a 404 to any of them says the set is not stored (docs/reference/api.md). */
    private static final java.util.Set<String> NAMES_A_PROFILE_SET =
            java.util.Set.of("POST /v1/plans", "POST /v1/repairs", "POST /v1/evaluations");

    private final URI baseUrl;
    private final Duration timeout;
    private final PlannerToken token;
    private final ObjectMapper json;
    private final HttpClient http;

    public PlannerClient(URI baseUrl, Duration timeout, PlannerToken token, ObjectMapper json) {
        this.baseUrl = baseUrl;
        this.timeout = timeout;
        this.token = token;
        this.json = json;
        this.http = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(timeout)
                .followRedirects(HttpClient.Redirect.NEVER)
                .build();
    }

    /** Asks for a new plan; the planner answers 201 with the stored Plan. */
    public Plan requestPlan(JsonNode planRequest) throws PlanFault {
        String body;
        try {
            body = json.writeValueAsString(planRequest);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("a PlanRequest built from Java maps could not be written as JSON", e);
        }
        HttpRequest request = base("/v1/plans")
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body, StandardCharsets.UTF_8))
                .build();
        return Plan.parse(call(request, "POST /v1/plans"));
    }

    /**
     * The id of the plan bound to a running topology by name ({@code GET /v1/assignments/{topology}}), or null when
     * none is bound.
     */
    public String fetchBoundPlanId(String topologyName) throws PlanFault {
        String path = "/v1/assignments/" + encode(topologyName);
        try {
            JsonNode binding = call(base(path).GET().build(), "GET " + path);
            JsonNode planId = binding == null ? null : binding.get("plan_id");
            return planId == null || !planId.isTextual() ? null : planId.asText();
        } catch (PlanFault fault) {
            if (fault.countsAgainstPlanner()) {
                throw fault;
            }
            return null;
        }
    }

    /** Binds a stored plan to a running topology ({@code PUT /v1/assignments/{topology}}). */
    public void bind(String topologyName, String planId, String reason) throws PlanFault {
        String path = "/v1/assignments/" + encode(topologyName);
        String body = json.createObjectNode().put("plan_id", planId).put("reason", reason).toString();
        call(base(path).header("Content-Type", "application/json")
                .PUT(HttpRequest.BodyPublishers.ofString(body, StandardCharsets.UTF_8)).build(), "PUT " + path);
    }

    /** A repair: the request's {@code keep} instances stay, the others are placed ({@code POST /v1/repairs}). */
    public Plan requestRepair(JsonNode repairRequest) throws PlanFault {
        HttpRequest request = base("/v1/repairs")
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(repairRequest.toString(), StandardCharsets.UTF_8))
                .build();
        return Plan.parse(call(request, "POST /v1/repairs"));
    }

    /** The input rate (tuples/s) the planner predicts for a given placement ({@code POST /v1/evaluations}). */
    public double evaluate(JsonNode evaluationRequest) throws PlanFault {
        HttpRequest request = base("/v1/evaluations")
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(evaluationRequest.toString(), StandardCharsets.UTF_8))
                .build();
        JsonNode rate = call(request, "POST /v1/evaluations").get("input_rate");
        if (rate == null || !rate.isNumber()) {
            throw PlanFault.plannerFailed("malformed evaluation from the planner: no numeric 'input_rate'");
        }
        return rate.asDouble();
    }

    private static String encode(String name) {
        return URLEncoder.encode(name, StandardCharsets.UTF_8).replace("+", "%20");
    }

    /** Reads a plan the planner already stores. */
    public Plan fetchPlan(String planId) throws PlanFault {
        String path = "/v1/plans/" + URLEncoder.encode(planId, StandardCharsets.UTF_8).replace("+", "%20");
        return Plan.parse(call(base(path).GET().build(), "GET /v1/plans/" + planId));
    }

    /**
     * The machine base load of a stored profile set ({@code source.machine_base_load}: percent of a
     * machine per machine type, the CPU its supervisor and worker JVMs use with no work), so plans are
     * made on what is left of each machine. Empty when the set reports none or is not stored (then the
     * plan request itself says what is wrong).
     */
    public Map<String, Double> fetchBaseLoad(String profileSet) throws PlanFault {
        return fetchProfileSet(profileSet).baseLoad();
    }

    /**
     * What the plugin reads of a stored profile set: its newest version (null where the planner has no such set)
     * and its machine base load ({@link #fetchBaseLoad}).
     */
    public record ProfileSetInfo(Long version, Map<String, Double> baseLoad) {
    }

    /** Reads a stored profile set ({@code GET /v1/profiles/{name}}); a set the planner refuses to give has no version. */
    public ProfileSetInfo fetchProfileSet(String profileSet) throws PlanFault {
        String path = "/v1/profiles/" + URLEncoder.encode(profileSet, StandardCharsets.UTF_8).replace("+", "%20");
        JsonNode set;
        try {
            set = call(base(path).GET().build(), "GET /v1/profiles/" + profileSet);
        } catch (PlanFault fault) {
            if (fault.countsAgainstPlanner()) {
                throw fault;
            }
            return new ProfileSetInfo(null, Map.of());
        }
        JsonNode version = set == null ? null : set.get("version");
        return new ProfileSetInfo(version != null && version.canConvertToLong() ? version.asLong() : null,
                baseLoadOf(set, profileSet));
    }

    /** Reads and checks {@code source.machine_base_load} of a profile set. */
    static Map<String, Double> baseLoadOf(JsonNode profileSet, String name) throws PlanFault {
        JsonNode raw = profileSet == null ? null : profileSet.path("source").get(BASE_LOAD);
        if (raw == null || raw.isNull()) {
            return Map.of();
        }
        if (!raw.isObject()) {
            throw PlanFault.badProfileSet("profile set " + name + ": source." + BASE_LOAD
                    + " must map machine types to percent, got " + oneLine(raw.toString()));
        }
        Map<String, Double> loads = new TreeMap<>();
        for (Map.Entry<String, JsonNode> entry : (Iterable<Map.Entry<String, JsonNode>>) raw::fields) {
            JsonNode value = entry.getValue();
            double percent = value.isNumber() ? value.asDouble() : Double.NaN;
            if (!(percent >= 0.0 && percent < 100.0)) {
                throw PlanFault.badProfileSet("profile set " + name + ": the base load of machine type "
                        + entry.getKey() + " must be a percent from 0 up to (not including) 100, got "
                        + oneLine(value.toString()));
            }
            loads.put(entry.getKey(), percent);
        }
        return loads;
    }

    /**
     * Tells the planner which topologies the cluster runs ({@code POST /v1/tenants/alive}): their ledger registrations
     * are renewed and every other one (a killed topology's) is released. Returns those of them the ledger refuses now
     * ({@code evicted}: after a priority change, say), for the plugin to evict.
     */
    public List<Plan.Evicted> sendAlive(Collection<String> topologyNames) throws PlanFault {
        ObjectNode body = json.createObjectNode();
        ArrayNode names = body.putArray("topologies");
        topologyNames.forEach(names::add);
        HttpRequest request = base("/v1/tenants/alive")
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body.toString(), StandardCharsets.UTF_8))
                .build();
        List<Plan.Evicted> evicted = new ArrayList<>();
        for (JsonNode e : call(request, "POST /v1/tenants/alive").path("evicted")) {
            if (e.path("topology").isTextual()) {
                evicted.add(new Plan.Evicted(e.get("topology").asText(), e.path("reason").asText("")));
            }
        }
        return evicted;
    }

    public URI baseUrl() {
        return baseUrl;
    }

    private HttpRequest.Builder base(String path) throws PlanFault {
        HttpRequest.Builder builder = HttpRequest.newBuilder(URI.create(baseUrl + path))
                .timeout(timeout)
                .header("Accept", "application/json");
        String bearer = token.get();
        if (bearer != null) {
            builder.header("Authorization", "Bearer " + bearer);
        }
        return builder;
    }

    private JsonNode call(HttpRequest request, String what) throws PlanFault {
        CompletableFuture<HttpResponse<String>> pending =
                http.sendAsync(request, HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
        HttpResponse<String> response;
        try {
            response = pending.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            pending.cancel(true);
            throw timedOut(what);
        } catch (InterruptedException e) {
            pending.cancel(true);
            Thread.currentThread().interrupt();
            throw PlanFault.plannerFailed(what + " to " + baseUrl + " was interrupted");
        } catch (ExecutionException e) {
            Throwable cause = e.getCause() == null ? e : e.getCause();
            if (cause instanceof HttpTimeoutException) {
                throw timedOut(what);
            }
            if (cause instanceof ConnectException) {
                throw PlanFault.plannerFailed("planner unreachable at " + baseUrl + " (connection refused)");
            }
            throw PlanFault.plannerFailed("planner unreachable at " + baseUrl + ": " + describe(cause));
        }

        int status = response.statusCode();
        if (status == 200 || status == 201) {
            try {
                return json.readTree(response.body());
            } catch (JsonProcessingException e) {
                throw PlanFault.plannerFailed("malformed plan from the planner: the answer to " + what
                        + " is not JSON (" + oneLine(e.getOriginalMessage()) + ")");
            }
        }
        String reason = what + " answered HTTP " + status + detail(response.body());
        String code = errorCode(response.body());
        if (status == 422 && PROFILE_MISSING.equals(code)) {
            throw PlanFault.profilesMissing("planner refused the request: " + reason, ProfileGap.pairs(missingPairs(response.body())));
        }
        if (status == 404 && NAMES_A_PROFILE_SET.contains(what) && "not_found".equals(code)
                && reason.contains("profile set")) { // the service's own 404 to these: the set is not stored
            throw PlanFault.profilesMissing("planner refused the request: " + reason, ProfileGap.unknown());
        }
        if (status == 409 && response.body() != null && response.body().contains("\"admission_refused\"")) {
            throw PlanFault.notAdmitted("planner did not admit it: " + detail(response.body()).substring(2));
        }
        if (status == 404 || status == 422 || status == 400 || status == 413) {
            throw PlanFault.plannerRefused("planner refused the request: " + reason);
        }
        throw PlanFault.plannerFailed("planner failed: " + reason);
    }

    /** The service's machine-readable {@code error} code of an error answer, or null. */
    private String errorCode(String body) {
        try {
            JsonNode code = body == null || body.isBlank() ? null : json.readTree(body).get("error");
            return code != null && code.isTextual() ? code.asText() : null;
        } catch (JsonProcessingException notJson) {
            return null;
        }
    }

    /** The pairs of a {@code profile_missing} answer ({@code missing}); empty where it names none. */
    private List<ProfileGap.Pair> missingPairs(String body) {
        List<ProfileGap.Pair> pairs = new ArrayList<>();
        try {
            for (JsonNode pair : json.readTree(body).path("missing")) {
                pairs.add(new ProfileGap.Pair(pair.path("component").asText(""), pair.path("profile").asText(""),
                        pair.path("machine_type").asText("")));
            }
        } catch (JsonProcessingException notJson) {
            // errorCode read it, so it is JSON; nothing more to take
        }
        return pairs;
    }

    private PlanFault timedOut(String what) {
        return PlanFault.plannerFailed("planner timed out: " + what + " to " + baseUrl
                + " gave no answer within " + timeout.toMillis() + " ms");
    }

    /** The planner's own words for an error: FastAPI's {@code detail}, else the body's start. */
    private String detail(String body) {
        if (body == null || body.isBlank()) {
            return "";
        }
        String text = body;
        try {
            JsonNode detail = json.readTree(body).get("detail");
            if (detail != null) {
                text = detail.isTextual() ? detail.asText() : detail.toString();
            }
        } catch (JsonProcessingException notJson) {
            // the raw body is the best description there is
        }
        return ": " + oneLine(text);
    }

    private static String describe(Throwable cause) {
        String message = cause.getMessage();
        return cause.getClass().getSimpleName() + (message == null ? "" : " " + oneLine(message));
    }

    private static String oneLine(String text) {
        String flat = text == null ? "" : text.replaceAll("\\s+", " ").trim();
        return flat.length() <= MAX_DETAIL_CHARS ? flat : flat.substring(0, MAX_DETAIL_CHARS) + "...";
    }
}
