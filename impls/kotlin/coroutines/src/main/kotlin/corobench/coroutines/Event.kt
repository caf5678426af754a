package corobench.coroutines

/**
 * A chain message that is one of several kinds: a sealed interface with one class per kind.
 * - [IntEvent]: the int payload (value S), one small object per event.
 * - [StrEvent]: shares the sender's String (the JVM's ordinary way to pass a string), wrapped.
 * - [StrPtrEvent]: a reference to one shared [StrHolder] that holds the string.
 * - [StrCloneEvent]: a fresh String whose characters were copied for this event.
 */
sealed interface Event

class IntEvent(val value: Long) : Event

class StrEvent(val s: String) : Event

/** The one shared string every str_ptr event points at. */
class StrHolder(val s: String)

class StrPtrEvent(val holder: StrHolder) : Event

class StrCloneEvent(val s: String) : Event

/**
 * The event's weight: an int's value, a string's length in bytes. The strings are ASCII (Latin-1
 * compact strings on the JVM), so their length in chars is their length in bytes.
 */
fun weight(e: Event): Long = when (e) {
    is IntEvent -> e.value
    is StrEvent -> e.s.length.toLong()
    is StrPtrEvent -> e.holder.s.length.toLong()
    is StrCloneEvent -> e.s.length.toLong()
}
