package corobench.common;

/** The machine refused a resource (protocol exit 3): the message names it and how far we got. */
public final class ResourceRefused extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public ResourceRefused(String message) {
        super(message, null, false, false);
    }
}
