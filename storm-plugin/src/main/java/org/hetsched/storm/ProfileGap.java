package org.hetsched.storm;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

/**
 * Why the planner cannot plan a topology from its own profiles: the named set is not stored, or it lacks
 * (profile key, machine type) pairs the topology needs on this cluster. No other tenant, retry or breaker changes
 * that; only a new version of the set or other machine types do.
 *
 * @param unknownSet whether the planner has no profile set of that name ({@code 404} to {@code POST /v1/plans})
 * @param missing    the pairs the set lacks, each with a component that needs it ({@code 422 profile_missing})
 * @param version    the set's newest version when the plugin read it before asking, or null (not stored, not read)
 */
public record ProfileGap(boolean unknownSet, List<Pair> missing, Long version) {

    /** One missing (profile key, machine type) pair and a component that needs it. */
    public record Pair(String component, String profile, String machineType) {
    }

    public ProfileGap {
        missing = List.copyOf(missing);
    }

    static ProfileGap unknown() {
        return new ProfileGap(true, List.of(), null);
    }

    static ProfileGap pairs(List<Pair> missing) {
        return new ProfileGap(false, missing, null);
    }

    ProfileGap withVersion(Long newest) {
        return new ProfileGap(unknownSet, missing, newest);
    }

    /**
     * The cause in one sentence, e.g. {@code profile set lab has no profile for component count (profile key
     * counter) on machine types small, medium}; {@code components}: component id to profile key, to name every
     * component a missing key leaves without a profile (the planner names one).
     */
    String cause(String profileSet, String plannerUrl, Map<String, String> components) {
        if (unknownSet) {
            return "profile set " + profileSet + " does not exist on the planner at " + plannerUrl;
        }
        Map<String, TreeSet<String>> typesByKey = new LinkedHashMap<>();
        missing.forEach(p -> typesByKey.computeIfAbsent(p.profile(), k -> new TreeSet<>()).add(p.machineType()));
        List<String> parts = new ArrayList<>();
        typesByKey.forEach((key, types) -> {
            List<String> named = new ArrayList<>();
            components.forEach((component, profile) -> {
                if (profile.equals(key)) {
                    named.add(component);
                }
            });
            if (named.isEmpty()) {
                missing.stream().filter(p -> p.profile().equals(key)).findFirst().ifPresent(p -> named.add(p.component()));
            }
            String who = (named.size() == 1 ? "component " : "components ") + String.join(", ", named)
                    + (named.size() == 1 && named.get(0).equals(key) ? "" : " (profile key " + key + ")");
            parts.add(who + " on machine type" + (types.size() == 1 ? " " : "s ") + String.join(", ", types));
        });
        return "profile set " + profileSet + " has no profile for " + String.join("; for ", parts);
    }
}
