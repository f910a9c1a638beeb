package org.hetsched.heldout;

import java.util.SplittableRandom;

/**
 * A seeded stream of click events, {@code user,session,action,items}: a few heavy users (so a fields grouping on
 * the user is uneven, as real keys are), and an item list whose length depends on the action (a view has none, a
 * cart one or two, a purchase one to four), so the bolt that emits one tuple per item has an output ratio other
 * than one (about 0.7 here).
 */
final class ClickEvents {
    static final int USERS = 1000;
    static final int ITEMS = 500;

    private final SplittableRandom random;
    private long session;

    ClickEvents(long seed) {
        this.random = new SplittableRandom(seed);
    }

    /** The next event line. */
    String next() {
        // the square of a uniform number favours low ids: user 0..31 get about a fifth of the events
        double u = random.nextDouble();
        int user = (int) (u * u * USERS);
        if (random.nextInt(8) == 0) {
            session++;
        }
        int roll = random.nextInt(100);
        String action;
        int items;
        if (roll < 60) {
            action = "view";
            items = 0;
        } else if (roll < 85) {
            action = "cart";
            items = 1 + random.nextInt(2);
        } else {
            action = "buy";
            items = 1 + random.nextInt(4);
        }
        StringBuilder line = new StringBuilder(48);
        line.append('u').append(user).append(",s").append(session).append(',').append(action).append(',');
        for (int i = 0; i < items; i++) {
            if (i > 0) {
                line.append('|');
            }
            line.append('i').append(random.nextInt(ITEMS));
        }
        return line.toString();
    }
}
