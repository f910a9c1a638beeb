package org.hetsched.storm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * A real HTTP server on 127.0.0.1 standing in for the planning service, answering as a test tells it:
 * good plans, or each of the faults the plugin must survive. A plan request that breaks the service's
 * basic rules ({@link PlanRequestSchema}) is answered 422 as the service would, whatever the test's behaviour.
 *
 * <p>Reads of a profile set ({@code GET /v1/profiles/{name}}, which the plugin makes before asking for a
 * new plan) are answered by the server itself with {@link #profileReadAnswer} and kept apart in
 * {@link #profileReads()}, so {@link #calls()} holds the plan calls the tests are about.
 */
final class FakePlanner implements AutoCloseable {
    static final ObjectMapper JSON = new ObjectMapper();

    /** One call the plugin made. */
    record Call(String method, String path, String authorization, JsonNode body) {
    }

    /** What to answer: status, body, and how long to wait first. */
    record Answer(int status, String body, long delayMillis) {
        static Answer json(int status, JsonNode body) {
            return new Answer(status, body.toString(), 0);
        }

        static Answer raw(int status, String body) {
            return new Answer(status, body, 0);
        }
    }

    /** Decides the answer to a call. */
    interface Behaviour {
        Answer answer(Call call);
    }

    /** Chooses the machine of instance {@code index} of a component, given the request's machine ids. */
    interface Rule {
        String machineFor(String component, int index, List<String> machines);
    }

    private final HttpServer server;
    private final ExecutorService threads = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "fake-planner");
        t.setDaemon(true);
        return t;
    });
    private final List<Call> calls = Collections.synchronizedList(new ArrayList<>());
    private final List<Call> profileReads = Collections.synchronizedList(new ArrayList<>());
    private final List<Call> heartbeats = Collections.synchronizedList(new ArrayList<>());
    private volatile Answer heartbeatAnswer = Answer.raw(200, "{\"renewed\": [], \"released\": []}");
    private volatile Behaviour behaviour;
    private volatile Behaviour profileReadAnswer = call -> Answer.json(200, profileSetWithBaseLoad(
            call.path().substring(PROFILES.length()), null));
    private static final String PROFILES = "/v1/profiles/";
    private static final String ASSIGNMENTS = "/v1/assignments/";
    /** Plans bound to topologies by name, as {@code /v1/assignments/{topology}} keeps them. */
    private final java.util.Map<String, String> bindings = new java.util.concurrent.ConcurrentHashMap<>();
    private final List<Call> bindingCalls = Collections.synchronizedList(new ArrayList<>());

    FakePlanner(Behaviour behaviour) throws IOException {
        this.behaviour = behaviour;
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.createContext("/", this::handle);
        server.setExecutor(threads);
        server.start();
    }

    URI url() {
        return URI.create("http://127.0.0.1:" + server.getAddress().getPort());
    }

    /** The answer to every {@code POST /v1/tenants/alive} from now on. */
    void answerHeartbeatsWith(Answer answer) {
        heartbeatAnswer = answer;
    }

    void answerWith(Behaviour next) {
        behaviour = next;
    }

    /** How reads of a profile set are answered (by default: a set with no machine base load). */
    void answerProfileReadsWith(Behaviour next) {
        profileReadAnswer = next;
    }

    /** The plugin's {@code POST /v1/tenants/alive} calls, kept apart from {@link #calls()}. */
    List<Call> heartbeats() {
        synchronized (heartbeats) {
            return List.copyOf(heartbeats);
        }
    }

    List<Call> profileReads() {
        synchronized (profileReads) {
            return List.copyOf(profileReads);
        }
    }

    /** A stored profile set as the service returns it, with {@code source.machine_base_load} when given. */
    static ObjectNode profileSetWithBaseLoad(String name, JsonNode baseLoad) {
        ObjectNode set = JSON.createObjectNode();
        set.put("name", name);
        set.putArray("entries");
        ObjectNode source = set.putObject("source");
        if (baseLoad != null) {
            source.set("machine_base_load", baseLoad);
        }
        return set;
    }

    /** {@code GET /v1/plans/{id}} answered from {@code stored} (404 for an unknown id); null for any other call. */
    static Answer storedPlanRead(Call call, java.util.Map<String, ObjectNode> stored) {
        if (!call.method().equals("GET") || !call.path().startsWith("/v1/plans/")) {
            return null;
        }
        ObjectNode plan = stored.get(call.path().substring("/v1/plans/".length()));
        return plan == null ? Answer.raw(404, "{\"detail\": \"no such plan\"}") : Answer.json(200, plan);
    }

    /** Binds a plan to a topology as {@code PUT /v1/assignments/{topology}} would. */
    void bind(String topologyName, String planId) {
        bindings.put(topologyName, planId);
    }

    /** The plan bound to a topology, or null. */
    String boundPlan(String topologyName) {
        return bindings.get(topologyName);
    }

    /** Reads and writes of bindings ({@code /v1/assignments/...}), kept apart from {@link #calls()}. */
    List<Call> bindingCalls() {
        synchronized (bindingCalls) {
            return List.copyOf(bindingCalls);
        }
    }

    List<Call> calls() {
        synchronized (calls) {
            return List.copyOf(calls);
        }
    }

    @Override
    public void close() {
        server.stop(0);
        threads.shutdownNow();
    }

    /** A URL where nothing listens: a port bound and released again. */
    static URI nothingListening() throws IOException {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return URI.create("http://127.0.0.1:" + socket.getLocalPort());
        }
    }

    /** Answers every plan request with a plan made by {@code rule}, as the real service would shape it. */
    static Behaviour planning(String planId, Rule rule) {
        return call -> call.method().equals("GET")
                ? Answer.raw(404, "{\"detail\": \"plan '" + call.path().replace("/v1/plans/", "") + "' does not exist\"}")
                : Answer.json(201, planFor(call.body(), planId, rule, true));
    }

    /** A Plan for a PlanRequest: every component's fixed parallelism placed by {@code rule}. */
    static ObjectNode planFor(JsonNode request, String planId, Rule rule, boolean withSystemComponents) {
        List<String> machines = new ArrayList<>();
        request.get("cluster").get("machines").forEach(m -> machines.add(m.get("id").asText()));
        ObjectNode plan = JSON.createObjectNode();
        plan.put("id", planId);
        plan.put("strategy", request.path("strategy").asText("paper"));
        plan.put("topology", request.get("topology").get("name").asText());
        plan.put("input_rate", 10.0);
        ObjectNode instances = plan.putObject("instances");
        ArrayNode assignments = plan.putArray("assignments");
        for (JsonNode component : request.get("topology").get("components")) {
            String id = component.get("id").asText();
            if (!withSystemComponents && id.startsWith("__")) {
                continue;
            }
            int count = component.get("parallelism").asInt();
            instances.put(id, count);
            for (int i = 0; i < count; i++) {
                assignments.addObject().put("component", id).put("index", i)
                        .put("machine", rule.machineFor(id, i, machines))
                        .put("input_rate", 1.0).put("cpu", 5.0);
            }
        }
        ArrayNode loads = plan.putArray("machines");
        request.get("cluster").get("machines").forEach(m -> loads.addObject().put("id", m.get("id").asText())
                .put("type", m.get("type").asText()).put("utilization", 0.0).put("instances", 0));
        plan.putObject("stats").put("elapsed_ms", 1.0);
        return plan;
    }

    private Answer bindingAnswer(Call call) {
        String topology = call.path().substring(ASSIGNMENTS.length());
        if (call.method().equals("PUT")) {
            bindings.put(topology, call.body().get("plan_id").asText());
        }
        String planId = bindings.get(topology);
        if (planId == null) {
            return Answer.raw(404, "{\"detail\": \"no plan is bound to topology '" + topology + "'\"}");
        }
        return Answer.json(200, JSON.createObjectNode().put("topology", topology).put("plan_id", planId)
                .put("reason", "").put("created_at", "2026-01-01T00:00:00.000Z"));
    }

    /** A plan request: answered 422 as the service would where it breaks {@link PlanRequestSchema}, before any behaviour. */
    private static boolean isPlanRequest(Call call) {
        return call.method().equals("POST") && call.path().equals("/v1/plans");
    }

    /** The service's answer to a request body it refuses (planner/service/errors.py). */
    static Answer refusal(String fault) {
        ObjectNode body = JSON.createObjectNode().put("detail", fault).put("error", "invalid_request");
        return Answer.json(422, body);
    }

    private void handle(HttpExchange exchange) throws IOException {
        try (exchange) {
            byte[] in = exchange.getRequestBody().readAllBytes();
            JsonNode body = in.length == 0 ? null : JSON.readTree(in);
            Call call = new Call(exchange.getRequestMethod(), exchange.getRequestURI().getPath(),
                    exchange.getRequestHeaders().getFirst("Authorization"), body);
            boolean profileRead = call.method().equals("GET") && call.path().startsWith(PROFILES);
            boolean binding = call.path().startsWith(ASSIGNMENTS);
            boolean heartbeat = call.method().equals("POST") && call.path().equals("/v1/tenants/alive");
            (profileRead ? profileReads : heartbeat ? heartbeats : binding ? bindingCalls : calls).add(call);
            String fault = isPlanRequest(call) ? PlanRequestSchema.fault(call.body()) : null;
            Answer answer = fault != null ? refusal(fault)
                    : heartbeat ? heartbeatAnswer
                    : binding ? bindingAnswer(call) : (profileRead ? profileReadAnswer : behaviour).answer(call);
            if (answer.delayMillis() > 0) {
                try {
                    Thread.sleep(answer.delayMillis());
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
            byte[] out = answer.body().getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().set("Content-Type", "application/json");
            exchange.sendResponseHeaders(answer.status(), out.length == 0 ? -1 : out.length);
            if (out.length > 0) {
                try (OutputStream os = exchange.getResponseBody()) {
                    os.write(out);
                }
            }
        } catch (IOException e) {
            // the plugin gave up on this call (timeout): nothing left to answer
        }
    }
}
