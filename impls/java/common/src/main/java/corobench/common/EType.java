package corobench.common;

/** The chain scenario's event types; {@code code} is the numeric alias accepted by --etype. */
public enum EType {
    INT("int"), STR("str"), STR_PTR("str_ptr"), STR_CLONE("str_clone");

    public final String label;

    EType(String label) {
        this.label = label;
    }

    public boolean isString() {
        return this != INT;
    }

    static EType parse(String s) throws BadInput {
        for (EType t : values()) {
            if (t.label.equals(s) || Integer.toString(t.ordinal()).equals(s)) {
                return t;
            }
        }
        throw new BadInput("unknown event type '" + s + "' (expected 0/int, 1/str, 2/str_ptr, 3/str_clone)");
    }
}
