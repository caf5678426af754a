# Design measurement: cost of building events and of copying a 10-byte string, ns per op.
import timeit
class IntEvent:
    __slots__ = ("value",)
    def __init__(self, v): self.value = v
    def weight(self): return self.value
class IntEventD:
    def __init__(self, v): self.value = v
s = "x" * 10
b = s.encode()
n = 2_000_000
def t(stmt, g):
    return min(timeit.repeat(stmt, globals=g, number=n, repeat=3)) / n * 1e9
g = dict(globals())
print("slots class new+weight()  %.0f ns" % t("IntEvent(10).weight()", g))
print("slots class new+.value    %.0f ns" % t("IntEvent(10).value", g))
print("dict class new+.value     %.0f ns" % t("IntEventD(10).value", g))
print("tuple (0,10) [1]          %.0f ns" % t("(K, v)[1]", dict(K=0, v=10)))
print("str.encode()              %.0f ns" % t("s.encode()", g))
print("bytearray(b)              %.0f ns" % t("bytearray(b)", g))
print("b[:] is b", b[:] is b, "bytes(b) is b", bytes(b) is b, "''.join([s]) is s", "".join([s]) is s, "s[:] is s", s[:] is s, "str(s) is s", str(s) is s)
print("s.encode().decode()       %.0f ns" % t("s.encode().decode()", g))
print("str(b, 'ascii')           %.0f ns" % t("str(b, 'ascii')", g))
print("b.decode()                %.0f ns" % t("b.decode()", g))
print("b.decode('latin-1')       %.0f ns" % t("b.decode('latin-1')", g))
print("is copy:", b.decode() is b.decode(), b.decode() is s)
