package org.hetsched.storm.baselines;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import org.slf4j.Logger;

/**
 * DPS's trigger: a JSON object of topology name to priority, read again whenever its modification
 * time or size changes. A missing file means no overrides; a malformed one is logged once and the last
 * good priorities stay, so a half-written file never reshuffles the cluster.
 */
final class PriorityFile {
    static final PriorityFile NONE = new PriorityFile(null);
    private static final ObjectMapper JSON = new ObjectMapper();

    private final Path path;
    private FileTime seenTime;
    private long seenSize = -1;
    private Map<String, Integer> last = Map.of();

    private PriorityFile(Path path) {
        this.path = path;
    }

    /** From the storm.yaml value: absent or blank means no file; anything but an absolute path is refused. */
    static PriorityFile fromConf(Object value, String key) {
        if (value == null || value.toString().isBlank()) {
            return NONE;
        }
        if (!(value instanceof String text)) {
            throw new IllegalArgumentException(key + " must be a path, got " + value.getClass().getSimpleName());
        }
        Path path;
        try {
            path = Path.of(text.trim());
        } catch (InvalidPathException e) {
            throw new IllegalArgumentException(key + " is not a path: '" + text + "'");
        }
        if (!path.isAbsolute()) {
            throw new IllegalArgumentException(key + " must be an absolute path, got '" + text + "'");
        }
        return new PriorityFile(path);
    }

    /** The overrides now; re-read only when the file changed. */
    synchronized Map<String, Integer> read(Logger log) {
        if (path == null) {
            return Map.of();
        }
        try {
            FileTime time = Files.getLastModifiedTime(path);
            long size = Files.size(path);
            if (time.equals(seenTime) && size == seenSize) {
                return last;
            }
            seenTime = time;
            seenSize = size;
            Map<String, Integer> parsed = parse(Files.readString(path));
            if (!parsed.equals(last)) {
                log.info("DPS priorities from {}: {}", path, parsed);
            }
            last = parsed;
        } catch (NoSuchFileException e) {
            if (seenSize != -1 || !last.isEmpty()) {
                log.info("DPS priority file {} is gone: topologies have their topology.priority", path);
            }
            seenTime = null;
            seenSize = -1;
            last = Map.of();
        } catch (IOException | IllegalArgumentException e) {
            log.warn("DPS priority file {} ignored, keeping the last priorities {}: {}", path, last, e.getMessage());
        }
        return last;
    }

    /** {@code {"name": 0, ...}} to a map; anything else is an {@link IllegalArgumentException} naming the fault. */
    static Map<String, Integer> parse(String text) {
        JsonNode root;
        try {
            root = JSON.readTree(text);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalArgumentException("not JSON: " + e.getOriginalMessage());
        }
        if (root == null || !root.isObject()) {
            throw new IllegalArgumentException("must be a JSON object of topology name to priority");
        }
        Map<String, Integer> priorities = new HashMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = root.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> field = it.next();
            JsonNode value = field.getValue();
            if (!value.canConvertToInt() || !value.isIntegralNumber() || value.asInt() < 0) {
                throw new IllegalArgumentException("the priority of " + field.getKey()
                        + " must be a whole number of at least 0, got " + value);
            }
            priorities.put(field.getKey(), value.asInt());
        }
        return priorities;
    }
}
