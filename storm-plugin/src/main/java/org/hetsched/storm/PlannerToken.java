package org.hetsched.storm;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.EnumSet;
import java.util.Set;

/**
 * Where the plugin's Bearer token for the planner comes from.
 *
 * <p>The token belongs in a file that only the Nimbus user can read ({@code hetsched.planner.token.file}):
 * Storm hands Nimbus's whole storm.yaml to anyone who asks ({@code getNimbusConf}, the Storm UI's
 * "Nimbus Configuration"), so a token written there is public. The file is read again for every planner
 * call, so a token rotated in the file, or a file fixed after a refusal, is used without restarting Nimbus.
 */
@FunctionalInterface
public interface PlannerToken {
    /** No token: calls go out without an Authorization header. */
    PlannerToken NONE = () -> null;

    /** The token to send, or null for none; a {@link PlanFault} when the token cannot be used. */
    String get() throws PlanFault;

    /** A token given inline (the deprecated {@code hetsched.planner.token}). */
    static PlannerToken inline(String token) {
        return () -> token;
    }

    /** A token read from {@code file} at every call, refused unless only its owner may read it. */
    static PlannerToken fromFile(Path file) {
        return () -> read(file);
    }

    /** Group and others must not read the file; other bits (the owner's, write, execute) do not leak the token. */
    Set<PosixFilePermission> TOO_OPEN = EnumSet.of(PosixFilePermission.GROUP_READ, PosixFilePermission.OTHERS_READ);

    /** Reads and checks a token file: it must exist, hold a token and be readable by its owner only. */
    static String read(Path file) throws PlanFault {
        String named = SchedulerSettings.PLANNER_TOKEN_FILE + " " + file;
        Set<PosixFilePermission> permissions;
        try {
            if (!Files.exists(file)) {
                throw PlanFault.badToken(named + " does not exist");
            }
            if (!Files.isRegularFile(file)) {
                throw PlanFault.badToken(named + " is not a regular file");
            }
            permissions = Files.getPosixFilePermissions(file);
        } catch (UnsupportedOperationException e) {
            throw PlanFault.badToken(named + ": its file system has no POSIX permissions, so who may read it cannot be checked");
        } catch (IOException e) {
            throw PlanFault.badToken(named + " cannot be checked: " + e);
        }
        Set<PosixFilePermission> open = EnumSet.noneOf(PosixFilePermission.class);
        open.addAll(permissions);
        open.retainAll(TOO_OPEN);
        if (!open.isEmpty()) {
            throw PlanFault.badToken(named + " is readable by " + (open.size() == 2 ? "group and others" :
                    open.contains(PosixFilePermission.GROUP_READ) ? "its group" : "others")
                    + " (" + PosixFilePermissions.toString(permissions) + "); make it readable by the Nimbus user only (chmod 600)");
        }
        String token;
        try {
            token = Files.readString(file, StandardCharsets.UTF_8).trim();
        } catch (NoSuchFileException e) {
            throw PlanFault.badToken(named + " does not exist");
        } catch (IOException e) {
            throw PlanFault.badToken(named + " cannot be read: " + e.getClass().getSimpleName()
                    + (e.getMessage() == null ? "" : " " + e.getMessage()));
        }
        if (token.isEmpty()) {
            throw PlanFault.badToken(named + " is empty");
        }
        if (token.chars().anyMatch(c -> c < 0x21 || c > 0x7e)) {
            throw PlanFault.badToken(named + " must hold the token alone: it has spaces inside or characters an HTTP header cannot carry");
        }
        return token;
    }
}
