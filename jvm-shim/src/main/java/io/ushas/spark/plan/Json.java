package io.ushas.spark.plan;

/** Minimal JSON writer over one StringBuilder (no allocation per value beyond the builder). */
final class Json {
    final StringBuilder out;

    Json(int capacity) {
        out = new StringBuilder(capacity);
    }

    Json str(String s) {
        if (s == null) {
            out.append("null");
            return this;
        }
        out.append('"');
        int n = s.length();
        int clean = 0;
        while (clean < n) {
            char c = s.charAt(clean);
            if (c < 0x20 || c == '"' || c == '\\') {
                break;
            }
            clean++;
        }
        out.append(s, 0, clean); // the common case: nothing to escape, one bulk copy
        for (int i = clean; i < n; i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': out.append("\\\""); break;
                case '\\': out.append("\\\\"); break;
                case '\n': out.append("\\n"); break;
                case '\r': out.append("\\r"); break;
                case '\t': out.append("\\t"); break;
                default:
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
            }
        }
        out.append('"');
        return this;
    }

    /** A key: a constant or a Scala field name, never in need of escaping. */
    Json key(String k) {
        out.append('"').append(k).append('"').append(':');
        return this;
    }

    Json raw(String s) {
        out.append(s);
        return this;
    }

    /** Appends what another writer holds (no intermediate String). */
    Json raw(Json other) {
        out.append(other.out);
        return this;
    }

    Json num(long v) {
        out.append(v);
        return this;
    }

    Json ch(char c) {
        out.append(c);
        return this;
    }

    /** Removes a trailing comma, if any (after writing a list of items each followed by ','). */
    Json trim() {
        int last = out.length() - 1;
        if (last >= 0 && out.charAt(last) == ',') {
            out.setLength(last);
        }
        return this;
    }

    @Override
    public String toString() {
        return out.toString();
    }
}
