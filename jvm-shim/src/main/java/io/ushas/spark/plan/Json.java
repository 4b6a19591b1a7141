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
        for (int i = 0, n = s.length(); i < n; i++) {
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

    Json key(String k) {
        str(k);
        out.append(':');
        return this;
    }

    Json raw(String s) {
        out.append(s);
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
