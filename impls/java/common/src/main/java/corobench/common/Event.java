package corobench.common;

/**
 * A chain message that is one of several kinds: a sealed interface with one record per kind.
 *
 * <ul>
 *   <li>{@link Int}: the int payload (value S), a 16-byte object per event.</li>
 *   <li>{@link Str}: shares the sender's String (the JVM's ordinary way to pass a string), wrapped.</li>
 *   <li>{@link StrPtr}: a reference to one shared {@link Holder} that holds the string.</li>
 *   <li>{@link StrClone}: a fresh String whose characters were copied for this event.</li>
 * </ul>
 */
public sealed interface Event permits Event.Int, Event.Str, Event.StrPtr, Event.StrClone {
    record Int(long value) implements Event {}

    record Str(String s) implements Event {}

    record StrPtr(Holder holder) implements Event {}

    record StrClone(String s) implements Event {}

    /** The one shared string that every str_ptr event points at. */
    final class Holder {
        public final String s;

        public Holder(String s) {
            this.s = s;
        }
    }

    /**
     * The event's weight: an int's value, a string's length in bytes. The strings are ASCII
     * (Latin-1 compact strings), so their length in chars is their length in bytes.
     */
    static long weight(Event e) {
        return switch (e) {
            case Int i -> i.value();
            case Str s -> s.s().length();
            case StrPtr p -> p.holder().s.length();
            case StrClone c -> c.s().length();
        };
    }
}
