package corobench.common;

/** Bad input (protocol exit 2): the message is the one line written to stderr. */
public final class BadInput extends Exception {
    private static final long serialVersionUID = 1L;

    public BadInput(String message) {
        super(message, null, false, false);
    }
}
