package corobench.common;

/** Builds the single JSON output line. */
public final class Json {
    private final StringBuilder sb = new StringBuilder(256).append('{');

    public Json put(String key, long value) {
        key(key);
        sb.append(value);
        return this;
    }

    public Json put(String key, String value) {
        key(key);
        string(value);
        return this;
    }

    public Json put(String key, boolean value) {
        key(key);
        sb.append(value);
        return this;
    }

    /** A JSON null (e.g. a count the library does not expose). */
    public Json putNull(String key) {
        key(key);
        sb.append("null");
        return this;
    }

    private void key(String key) {
        if (sb.length() > 1) {
            sb.append(',');
        }
        string(key);
        sb.append(':');
    }

    private void string(String s) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') {
                sb.append('\\').append(c);
            } else if (c < 0x20) {
                sb.append(String.format("\\u%04x", (int) c));
            } else {
                sb.append(c);
            }
        }
        sb.append('"');
    }

    @Override
    public String toString() {
        return sb + "}";
    }
}
