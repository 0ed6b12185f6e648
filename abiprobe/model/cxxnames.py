"""Itanium C++ ABI symbol names: demangling, signature splitting and std::string ABI detection.

Pure: no I/O, no ctypes, no host library. The demangler reads the grammar of the Itanium C++ ABI's
mangling chapter and prints in the GNU toolchain's style (``__cxa_demangle`` of libstdc++ without
``DMGL_VERBOSE``: ``std::string``, ``char const*``, ``(anonymous namespace)``, ``{lambda(int)#1}``,
``[abi:cxx11]``, ``> >``, and libstdc++'s quirks: names over 1,024 characters refused, ``>>`` after an
empty pack), so a verdict reads the same on every host. What it does not read with certainty comes back
unchanged: expressions other than literals, parameters, names, braced initialisers, member access, calls,
sizeof and plain unary/binary operators; vector and _FloatN types; C++20 modules; template parameter
declarations; inheriting constructors; vendor operators. A name shown mangled is honest, a wrongly
demangled one is not.
``tests/test_cxxnames.py`` compares it with libstdc++ on the C++ symbols of the committed wheel facts
(``bench/bench_demangle.py`` on all of them), on a g++ build and on damaged names.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Literal

AbiTagKind = Literal["cxx11", "old"]


class _Fail(Exception):
    """The name is outside what this demangler reads with certainty."""


class _Node:
    """One component of a parsed name; ``kind`` says which, the other fields what it holds."""

    __slots__ = ("kind", "left", "memo", "num", "printing", "pure", "right", "text")

    def __init__(
        self,
        kind: str,
        left: _Node | None = None,
        right: _Node | None = None,
        text: str = "",
        num: int = 0,
    ) -> None:
        self.kind = kind
        self.left = left
        self.right = right
        self.text = text
        self.num = num
        self.printing = 0
        self.pure = -1  # 1: no template or function parameter beneath (prints the same anywhere)
        self.memo: tuple[str, str] | None = None  # (text, its last character) once printed, when pure


# Component kinds.
NAME = "name"
AUTO = "auto"
SUB_STD = "sub_std"
QUAL = "qual"
LOCAL = "local"
TYPED = "typed"
TEMPLATE = "template"
TPARAM = "tparam"
FPARAM = "fparam"
CTOR = "ctor"
DTOR = "dtor"
TAGGED = "tagged"
OPERATOR = "operator"
CONVERSION = "conversion"
BUILTIN = "builtin"
VENDOR_TYPE = "vendor_type"
FUNC = "func"
ARRAY = "array"
PTRMEM = "ptrmem"
ARGLIST = "arglist"
TARGLIST = "targlist"
LITERAL = "literal"
LAMBDA = "lambda"
UNNAMED = "unnamed"
PACK = "pack"
DECLTYPE = "decltype"
CLONE = "clone"
SPECIAL = "special"
CTOR_VTABLE = "ctor_vtable"
DEFAULT_ARG = "default_arg"
INIT_LIST = "init_list"
UNARY = "unary"
BINARY = "binary"
# modifiers of a type
CONST = "const"
VOLATILE = "volatile"
RESTRICT = "restrict"
POINTER = "pointer"
REF = "ref"
RREF = "rref"
COMPLEX = "complex"
IMAGINARY = "imaginary"
VENDOR_QUAL = "vendor_qual"
# qualifiers of a function (its ``this``, its exception specification)
CONST_THIS = "const_this"
VOLATILE_THIS = "volatile_this"
RESTRICT_THIS = "restrict_this"
REF_THIS = "ref_this"
RREF_THIS = "rref_this"
TXSAFE = "txsafe"
NOEXCEPT = "noexcept"
THROW = "throw"

_FNQUALS = frozenset({CONST_THIS, VOLATILE_THIS, RESTRICT_THIS, REF_THIS, RREF_THIS, TXSAFE, NOEXCEPT, THROW})
_CV = frozenset({CONST, VOLATILE, RESTRICT})
_MODIFIERS = frozenset({POINTER, REF, RREF, COMPLEX, IMAGINARY, VENDOR_QUAL}) | _CV | _FNQUALS
_AS_THIS = {RESTRICT: RESTRICT_THIS, VOLATILE: VOLATILE_THIS, CONST: CONST_THIS}
# What a modifier prints after the type it modifies.
_SUFFIXES = {
    RESTRICT: " restrict", RESTRICT_THIS: " restrict", VOLATILE: " volatile", VOLATILE_THIS: " volatile",
    CONST: " const", CONST_THIS: " const", TXSAFE: " transaction_safe", NOEXCEPT: " noexcept",
    THROW: " throw", POINTER: "*", REF: "&", REF_THIS: " &", RREF: "&&", RREF_THIS: " &&",
    COMPLEX: " _Complex", IMAGINARY: " _Imaginary",
}  # fmt: skip

# Builtin types: code -> printed name.
_BUILTINS: dict[str, str] = {
    "a": "signed char",
    "b": "bool",
    "c": "char",
    "d": "double",
    "e": "long double",
    "f": "float",
    "g": "__float128",
    "h": "unsigned char",
    "i": "int",
    "j": "unsigned int",
    "l": "long",
    "m": "unsigned long",
    "n": "__int128",
    "o": "unsigned __int128",
    "s": "short",
    "t": "unsigned short",
    "v": "void",
    "w": "wchar_t",
    "x": "long long",
    "y": "unsigned long long",
    "z": "...",
}
_BUILTIN_NODES = {code: _Node(BUILTIN, text=name, num=ord(code)) for code, name in _BUILTINS.items()}
_QUALS = frozenset("rVK")
_D_QUALS = frozenset("xoOw")
_INT_SUFFIX = {"i": "", "j": "u", "l": "l", "m": "ul", "x": "ll", "y": "ull"}
_D_BUILTINS = {
    "d": "decimal64",
    "e": "decimal128",
    "f": "decimal32",
    "h": "half",
    "u": "char8_t",
    "s": "char16_t",
    "i": "char32_t",
    "n": "decltype(nullptr)",
}

# Operator names: code -> (name as printed after "operator", arity in an expression).
_OPERATORS: dict[str, tuple[str, int]] = {
    "aN": ("&=", 2), "aS": ("=", 2), "aa": ("&&", 2), "ad": ("&", 1), "an": ("&", 2),
    "at": ("alignof ", 1), "aw": ("co_await ", 1), "az": ("alignof ", 1), "cc": ("const_cast", 2),
    "cl": ("()", 2), "cm": (",", 2), "co": ("~", 1), "dV": ("/=", 2), "da": ("delete[] ", 1),
    "dc": ("dynamic_cast", 2), "de": ("*", 1), "dl": ("delete ", 1), "ds": (".*", 2), "dt": (".", 2),
    "dv": ("/", 2), "eO": ("^=", 2), "eo": ("^", 2), "eq": ("==", 2), "ge": (">=", 2), "gt": (">", 2),
    "ix": ("[]", 2), "lS": ("<<=", 2), "le": ("<=", 2), "ls": ("<<", 2), "lt": ("<", 2),
    "mI": ("-=", 2), "mL": ("*=", 2), "mi": ("-", 2), "ml": ("*", 2), "mm": ("--", 1),
    "na": ("new[]", 3), "ne": ("!=", 2), "ng": ("-", 1), "nt": ("!", 1), "nw": ("new", 3),
    "oR": ("|=", 2), "oo": ("||", 2), "or": ("|", 2), "pL": ("+=", 2), "pl": ("+", 2),
    "pm": ("->*", 2), "pp": ("++", 1), "ps": ("+", 1), "pt": ("->", 2), "qu": ("?", 3),
    "rM": ("%=", 2), "rS": (">>=", 2), "rc": ("reinterpret_cast", 2), "rm": ("%", 2),
    "rs": (">>", 2), "sc": ("static_cast", 2), "ss": ("<=>", 2), "st": ("sizeof ", 1),
    "sz": ("sizeof ", 1),
}  # fmt: skip

# Standard abbreviations: code -> (short form, long form, the name a constructor of it takes).
_STD_SUBS: dict[str, tuple[str, str, str]] = {
    "t": ("std", "std", ""),
    "a": ("std::allocator", "std::allocator", "allocator"),
    "b": ("std::basic_string", "std::basic_string", "basic_string"),
    "s": (
        "std::string",
        "std::basic_string<char, std::char_traits<char>, std::allocator<char> >",
        "basic_string",
    ),
    "i": ("std::istream", "std::basic_istream<char, std::char_traits<char> >", "basic_istream"),
    "o": ("std::ostream", "std::basic_ostream<char, std::char_traits<char> >", "basic_ostream"),
    "d": ("std::iostream", "std::basic_iostream<char, std::char_traits<char> >", "basic_iostream"),
}

# Operators read in expressions: the plain prefix ones and the plain infix ones.
_UNARY = frozenset({"ad", "de", "ng", "nt", "co", "ps", "sz"})
_BINARY = frozenset(
    [
        "pl",
        "mi",
        "ml",
        "dv",
        "rm",
        "an",
        "or",
        "eo",
        "ls",
        "rs",
        "aa",
        "oo",
        "eq",
        "ne",
        "lt",
        "gt",
        "le",
        "ge",
        "ss",
        "aS",
        "pL",
        "mI",
        "mL",
        "dV",
        "rM",
        "aN",
        "oR",
        "eO",
        "lS",
        "rS",
    ]
)

_SPECIAL_T = {
    "V": "vtable for ",
    "T": "VTT for ",
    "I": "typeinfo for ",
    "S": "typeinfo name for ",
    "F": "typeinfo fn for ",
}
_DIGITS = "0123456789"
_UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_LOWER = "abcdefghijklmnopqrstuvwxyz"


class _Parser:
    """Recursive descent over one mangled name, building :class:`_Node` trees and the substitution table."""

    def __init__(self, text: str) -> None:
        self.s = text + "\0\0\0\0"  # read past the end as NULs, like a C string
        self.n = len(text)
        self.i = 0
        self.subs: list[_Node] = []
        self.last_name: _Node | None = None
        self.is_expression = False
        self.is_conversion = False

    # reading

    def peek(self, ahead: int = 0) -> str:
        return self.s[self.i + ahead]

    def next(self) -> str:
        c = self.s[self.i]
        if c == "\0":
            raise _Fail
        self.i += 1
        return c

    def expect(self, c: str) -> None:
        if self.s[self.i] != c:
            raise _Fail
        self.i += 1

    def number(self) -> int:
        negative = self.peek() == "n"
        if negative:
            self.i += 1
        start = self.i
        s = self.s
        while s[self.i] in _DIGITS:
            self.i += 1
        value = int(self.s[start : self.i]) if self.i > start else 0
        return -value if negative else value

    def compact_number(self) -> int:
        """``_`` is 0, ``<n>_`` is n + 1."""
        if self.peek() == "_":
            num = 0
        elif self.peek() == "n":
            raise _Fail
        else:
            num = self.number() + 1
        self.expect("_")
        return num

    def add_sub(self, node: _Node) -> None:
        self.subs.append(node)

    # names

    def mangled_name(self, top: bool) -> _Node:
        if self.peek() == "_":
            self.i += 1
        elif top:
            raise _Fail
        self.expect("Z")
        node = self.encoding(top)
        if top:
            while self.peek() == "." and (self.peek(1) in _LOWER or self.peek(1) in "_" + _DIGITS):
                node = self.clone_suffix(node)
        return node

    def clone_suffix(self, encoding: _Node) -> _Node:
        start = self.i
        j = self.i
        s = self.s
        if j + 1 < self.n and s[j] == "." and (s[j + 1] in _LOWER or s[j + 1] in _DIGITS or s[j + 1] == "_"):
            j += 2
            while j < self.n and (s[j] in _LOWER or s[j] in _DIGITS or s[j] == "_"):
                j += 1
        while j + 1 < self.n and s[j] == "." and s[j + 1] in _DIGITS:
            j += 2
            while j < self.n and s[j] in _DIGITS:
                j += 1
        self.i = j
        return _Node(CLONE, encoding, _Node(NAME, text=s[start:j]))

    def encoding(self, top: bool) -> _Node:
        if self.peek() in ("G", "T"):
            return self.special_name()
        node = self.name()
        if self.peek() not in ("\0", "E"):
            ftype = self.bare_function_type(_has_return_type(node))
            if not top and node.kind == LOCAL and ftype.kind == FUNC:
                ftype.left = None
            node = _Node(TYPED, node, ftype)
        return node

    def special_name(self) -> _Node:
        c = self.next()
        if c == "T":
            c = self.next()
            if c in _SPECIAL_T:
                return _Node(SPECIAL, self.type(), text=_SPECIAL_T[c])
            if c == "h":
                self.call_offset("h")
                return _Node(SPECIAL, self.encoding(False), text="non-virtual thunk to ")
            if c == "v":
                self.call_offset("v")
                return _Node(SPECIAL, self.encoding(False), text="virtual thunk to ")
            if c == "c":
                self.call_offset("")
                self.call_offset("")
                return _Node(SPECIAL, self.encoding(False), text="covariant return thunk to ")
            if c == "C":
                derived = self.type()
                if self.number() < 0:
                    raise _Fail
                self.expect("_")
                base = self.type()
                return _Node(CTOR_VTABLE, base, derived)
            if c == "H":
                return _Node(SPECIAL, self.name(), text="TLS init function for ")
            if c == "W":
                return _Node(SPECIAL, self.name(), text="TLS wrapper function for ")
            raise _Fail
        if c == "G":
            c = self.next()
            if c == "V":
                return _Node(SPECIAL, self.name(), text="guard variable for ")
            if c == "A":
                return _Node(SPECIAL, self.encoding(False), text="hidden alias for ")
            if c == "T":
                c = self.next()
                text = "non-transaction clone for " if c == "n" else "transaction clone for "
                return _Node(SPECIAL, self.encoding(False), text=text)
        raise _Fail

    def call_offset(self, c: str) -> None:
        if not c:
            c = self.next()
        if c == "h":
            self.number()
        elif c == "v":
            self.number()
            self.expect("_")
            self.number()
        else:
            raise _Fail
        self.expect("_")

    def name(self) -> _Node:
        c = self.peek()
        if c == "N":
            return self.nested_name()
        if c == "Z":
            return self.local_name()
        if c == "U":
            return self.unqualified_name(None)
        node: _Node | None = None
        subst = False
        if c == "S":
            if self.peek(1) == "t":
                self.i += 2
                node = _Node(NAME, text="std")
            if self.peek() == "S":
                if node is not None:
                    raise _Fail
                node = self.substitution(False)
                subst = True
        if not subst:
            node = self.unqualified_name(node)
        assert node is not None
        if self.peek() == "I":
            if not subst:
                self.add_sub(node)
            node = _Node(TEMPLATE, node, self.template_args())
        return node

    def nested_name(self) -> _Node:
        self.expect("N")
        head, tail = self.cv_qualifiers(True)
        rqual = self.ref_qualifier(None)
        prefix = self.prefix()
        if tail is not None:
            tail.left = prefix
            node = head
        else:
            node = prefix
        assert node is not None
        if rqual is not None:
            rqual.left = node
            node = rqual
        self.expect("E")
        return node

    def prefix(self) -> _Node:
        node: _Node | None = None
        s = self.s
        while True:
            c = s[self.i]
            if c == "D" and s[self.i + 1] in ("T", "t"):
                if node is not None:
                    raise _Fail
                node = self.type()
            elif c == "I":
                if node is None:
                    raise _Fail
                node = _Node(TEMPLATE, node, self.template_args())
            elif c == "T":
                if node is not None:
                    raise _Fail
                node = self.template_param()
            elif c == "M":
                if node is None:
                    raise _Fail
                self.i += 1
                continue
            elif c == "S":
                if node is not None:
                    raise _Fail
                node = self.substitution(True)
                continue
            else:
                node = self.unqualified_name(node)
            if s[self.i] == "E":
                return node
            self.subs.append(node)

    def unqualified_name(self, scope: _Node | None) -> _Node:
        c = self.s[self.i]
        if c in _DIGITS:
            node = self.source_name()
        elif c in _LOWER:
            was = self.is_expression
            if c == "o" and self.peek(1) == "n":
                self.i += 2
                self.is_expression = False
            node = self.operator_name()
            self.is_expression = was
        elif c == "D" and self.peek(1) == "C":
            raise _Fail  # structured binding
        elif c in ("C", "D"):
            node = self.ctor_dtor_name()
        elif c == "L":
            self.i += 1
            node = self.source_name()
            self.discriminator()
        elif c == "U":
            c2 = self.peek(1)
            if c2 == "l":
                node = self.lambda_()
            elif c2 == "t":
                self.i += 2
                node = _Node(UNNAMED, num=self.compact_number())
                self.add_sub(node)
            else:
                raise _Fail
        else:
            raise _Fail
        if self.s[self.i] == "B":
            node = self.abi_tags(node)
        if scope is not None:
            node = _Node(QUAL, scope, node)
        return node

    def abi_tags(self, node: _Node) -> _Node:
        hold = self.last_name
        while self.peek() == "B":
            self.i += 1
            node = _Node(TAGGED, node, self.source_name())
        self.last_name = hold
        return node

    def source_name(self) -> _Node:
        s = self.s
        start = self.i
        while s[self.i] in _DIGITS:
            self.i += 1
        length = int(s[start : self.i]) if self.i > start else 0
        if length <= 0 or self.i + length > self.n:
            raise _Fail
        ident = self.s[self.i : self.i + length]
        self.i += length
        if length >= 10 and ident.startswith("_GLOBAL_") and ident[8] in "._$" and ident[9] == "N":
            ident = "(anonymous namespace)"
        node = _Node(NAME, text=ident)
        self.last_name = node
        return node

    def discriminator(self) -> None:
        if self.peek() != "_":
            return
        self.i += 1
        underscores = 1
        if self.peek() == "_":
            underscores = 2
            self.i += 1
        value = self.number()
        if value < 0:
            raise _Fail
        if underscores > 1 and value >= 10:
            self.expect("_")

    def ctor_dtor_name(self) -> _Node:
        last = self.last_name
        c = self.next()
        kind = self.next()
        if last is None:
            raise _Fail
        if c == "C":
            if kind == "I":
                raise _Fail  # inheriting constructor
            if kind not in "12345":
                raise _Fail
            return _Node(CTOR, last)
        if kind not in "01245":
            raise _Fail
        return _Node(DTOR, last)

    def operator_name(self) -> _Node:
        c1 = self.next()
        c2 = self.next()
        code = c1 + c2
        if c1 == "v" and c2 in _DIGITS:
            raise _Fail  # vendor extended operator
        if code == "cv":
            was = self.is_conversion
            self.is_conversion = not self.is_expression
            t = self.type()
            kind = CONVERSION if self.is_conversion else "cast"
            self.is_conversion = was
            if kind != CONVERSION:
                raise _Fail
            return _Node(CONVERSION, t)
        op = _OPERATORS.get(code)
        if op is None:
            raise _Fail
        return _Node(OPERATOR, text=op[0], num=op[1])

    def lambda_(self) -> _Node:
        self.i += 2
        params = self.parmlist()
        self.expect("E")
        return _Node(LAMBDA, params, num=self.compact_number())

    def local_name(self) -> _Node:
        self.expect("Z")
        function = self.encoding(False)
        self.expect("E")
        if self.peek() == "s":
            self.i += 1
            self.discriminator()
            entity = _Node(NAME, text="string literal")
        else:
            num = -1
            if self.peek() == "d":
                self.i += 1
                num = self.compact_number()
            entity = self.name()
            if entity.kind not in (LAMBDA, UNNAMED):
                self.discriminator()
            if num >= 0:
                entity = _Node(DEFAULT_ARG, entity, num=num)
        if function.kind == TYPED and function.right is not None and function.right.kind == FUNC:
            function.right.left = None
        return _Node(LOCAL, function, entity)

    def substitution(self, prefix: bool) -> _Node:
        self.expect("S")
        c = self.next()
        if c == "_" or c in _DIGITS or c in _UPPER:
            ident = 0
            if c != "_":
                while c != "_":
                    if c in _DIGITS:
                        ident = ident * 36 + ord(c) - 48
                    elif c in _UPPER:
                        ident = ident * 36 + ord(c) - 55
                    else:
                        raise _Fail
                    c = self.next()
                ident += 1
            if ident >= len(self.subs):
                raise _Fail
            return self.subs[ident]
        entry = _STD_SUBS.get(c)
        if entry is None:
            raise _Fail
        short, full, last = entry
        if last:
            self.last_name = _Node(SUB_STD, text=last)
        verbose = prefix and self.peek() in ("C", "D")
        node = _Node(SUB_STD, text=full if verbose else short)
        if self.peek() == "B":
            node = self.abi_tags(node)
            self.add_sub(node)
        return node

    # types

    def next_is_type_qual(self) -> bool:
        c = self.s[self.i]
        return c in _QUALS or (c == "D" and self.s[self.i + 1] in _D_QUALS)

    def cv_qualifiers(self, member_fn: bool) -> tuple[_Node | None, _Node | None]:
        """The qualifier chain, outermost first: (head, the innermost one whose ``left`` is to be set)."""
        nodes: list[_Node] = []
        while self.next_is_type_qual():
            c = self.next()
            right = None
            if c == "r":
                kind = RESTRICT_THIS if member_fn else RESTRICT
            elif c == "V":
                kind = VOLATILE_THIS if member_fn else VOLATILE
            elif c == "K":
                kind = CONST_THIS if member_fn else CONST
            else:
                c = self.next()
                if c == "x":
                    kind = TXSAFE
                elif c in ("o", "O"):
                    kind = NOEXCEPT
                    if c == "O":
                        right = self.expression()
                        self.expect("E")
                elif c == "w":
                    kind = THROW
                    right = self.parmlist()
                    self.expect("E")
                else:
                    raise _Fail
            nodes.append(_Node(kind, None, right))
        if not nodes:
            return None, None
        if not member_fn and self.peek() == "F":
            for node in nodes:
                node.kind = _AS_THIS.get(node.kind, node.kind)
        for outer, inner in itertools.pairwise(nodes):
            outer.left = inner
        return nodes[0], nodes[-1]

    def ref_qualifier(self, sub: _Node | None) -> _Node | None:
        c = self.peek()
        if c == "R":
            self.i += 1
            return _Node(REF_THIS, sub)
        if c == "O":
            self.i += 1
            return _Node(RREF_THIS, sub)
        return sub

    def type(self) -> _Node:
        c = self.s[self.i]
        builtin = _BUILTIN_NODES.get(c)
        if builtin is not None:  # the commonest case first; builtins are leaves, shared by every parse
            self.i += 1
            return builtin
        if c in _QUALS or (c == "D" and self.s[self.i + 1] in _D_QUALS):
            head, tail = self.cv_qualifiers(False)
            assert head is not None and tail is not None
            inner = self.function_type() if self.peek() == "F" else self.type()
            tail.left = inner
            node = head
            if inner.kind in (REF_THIS, RREF_THIS):
                tail.left = inner.left
                inner.left = head
                node = inner
            self.add_sub(node)
            return node
        can_subst = True
        if c == "u":
            self.i += 1
            node = _Node(VENDOR_TYPE, self.source_name())
            if self.peek() == "I":
                raise _Fail
        elif c == "F":
            node = self.function_type()
        elif c in _DIGITS or c in ("N", "Z"):
            node = self.name()
        elif c == "A":
            node = self.array_type()
        elif c == "M":
            self.i += 1
            cls = self.type()
            member = self.type()
            node = _Node(PTRMEM, cls, member)
        elif c == "T":
            node = self.template_param()
            if self.peek() == "I":
                if self.is_conversion:
                    raise _Fail
                self.add_sub(node)
                node = _Node(TEMPLATE, node, self.template_args())
        elif c in ("O", "P", "R", "C", "G"):
            self.i += 1
            kind = {"O": RREF, "P": POINTER, "R": REF, "C": COMPLEX, "G": IMAGINARY}[c]
            node = _Node(kind, self.type())
        elif c == "U":
            self.i += 1
            qual = self.source_name()
            if self.peek() == "I":
                qual = _Node(TEMPLATE, qual, self.template_args())
            node = _Node(VENDOR_QUAL, self.type(), qual)
        elif c == "D":
            self.i += 1
            c2 = self.next()
            can_subst = False
            if c2 in ("T", "t"):
                node = _Node(DECLTYPE, self.expression())
                self.expect("E")
                can_subst = True
            elif c2 == "p":
                node = _Node(PACK, self.type())
                can_subst = True
            elif c2 == "a":
                node = _Node(AUTO, text="auto")
            elif c2 == "c":
                node = _Node(AUTO, text="decltype(auto)")
            elif c2 in _D_BUILTINS:
                node = _Node(BUILTIN, text=_D_BUILTINS[c2], num=0)
            else:
                raise _Fail
        elif c == "S":
            c2 = self.peek(1)
            if c2 in _DIGITS or c2 == "_" or c2 in _UPPER:
                node = self.substitution(False)
                if self.peek() == "I":
                    node = _Node(TEMPLATE, node, self.template_args())
                else:
                    can_subst = False
            else:
                node = self.name()
                if node.kind == SUB_STD:
                    can_subst = False
        else:
            raise _Fail
        if can_subst:
            self.add_sub(node)
        return node

    def function_type(self) -> _Node:
        self.expect("F")
        if self.peek() == "Y":
            self.i += 1
        node = self.bare_function_type(True)
        qualified = self.ref_qualifier(node)
        assert qualified is not None
        self.expect("E")
        return qualified

    def bare_function_type(self, has_return: bool) -> _Node:
        if self.peek() == "J":
            self.i += 1
            has_return = True
        ret = self.type() if has_return else None
        return _Node(FUNC, ret, self.parmlist())

    def parmlist(self) -> _Node:
        items: list[_Node] = []
        s = self.s
        while True:
            c = s[self.i]
            if c in ("\0", "E", ".", "Q"):
                break
            if c in ("R", "O") and s[self.i + 1] == "E":
                break
            items.append(self.type())
        if not items:
            raise _Fail
        head = _chain(ARGLIST, items)
        if len(items) == 1 and items[0].kind == BUILTIN and items[0].text == "void":
            head.left = None
        return head

    def array_type(self) -> _Node:
        self.expect("A")
        c = self.peek()
        dim: _Node | None
        if c == "_":
            dim = None
        elif c in _DIGITS:
            start = self.i
            while self.peek() in _DIGITS:
                self.i += 1
            dim = _Node(NAME, text=self.s[start : self.i])
        else:
            dim = self.expression()
        self.expect("_")
        return _Node(ARRAY, dim, self.type())

    def template_param(self) -> _Node:
        self.expect("T")
        return _Node(TPARAM, num=self.compact_number())

    def template_args(self) -> _Node:
        hold = self.last_name
        if self.peek() not in ("I", "J"):
            raise _Fail
        self.i += 1
        if self.peek() == "E":
            self.i += 1
            return _Node(TARGLIST)
        items: list[_Node] = []
        s = self.s
        while True:
            items.append(self.template_arg())
            if s[self.i] in ("E", "Q"):
                break
        self.expect("E")
        self.last_name = hold
        return _chain(TARGLIST, items)

    def template_arg(self) -> _Node:
        c = self.s[self.i]
        if c == "X":
            self.i += 1
            node = self.expression()
            self.expect("E")
            return node
        if c == "L":
            return self.expr_primary()
        if c in ("I", "J"):
            return self.template_args()
        return self.type()

    # expressions: literals, parameters, names, braced initialisers, plain unary and binary operators,
    # member access, calls and sizeof; anything else (casts, folds, new/delete, throw) is not read

    def expression(self) -> _Node:
        was = self.is_expression
        self.is_expression = True
        node = self.expression_1()
        self.is_expression = was
        return node

    def expression_1(self) -> _Node:
        c = self.peek()
        c2 = self.peek(1)
        if c == "L":
            return self.expr_primary()
        if c == "T":
            return self.template_param()
        if c == "s" and c2 == "r":
            self.i += 2
            if self.peek() == "N":
                raise _Fail
            scope = self.type()
            member = self.unqualified_name(None)
            if self.peek() == "I":
                member = _Node(TEMPLATE, member, self.template_args())
            return _Node(QUAL, scope, member)
        if c == "s" and c2 == "p":
            self.i += 2
            return _Node(PACK, self.expression_1())
        if c == "f" and c2 == "p":
            self.i += 2
            if self.peek() == "T":
                self.i += 1
                return _Node(FPARAM, num=0)
            return _Node(FPARAM, num=self.compact_number() + 1)
        if c in _DIGITS or (c == "o" and c2 == "n"):
            if c == "o":
                self.i += 2
            name = self.unqualified_name(None)
            if self.peek() == "I":
                return _Node(TEMPLATE, name, self.template_args())
            return name
        if c in ("i", "t") and c2 == "l":
            self.i += 2
            t = self.type() if c == "t" else None
            if self.peek() == "\0" or self.peek(1) == "\0":
                raise _Fail
            return _Node(INIT_LIST, t, self.exprlist("E"))
        code = c + c2
        if code == "st":  # sizeof (type)
            op = self.operator_name()
            return _Node(UNARY, op, self.type(), num=1)  # num 1: the operand is a type
        if code == "cl":  # a call: callee, then the arguments up to E
            op = self.operator_name()
            callee = self.expression_1()
            return _Node(BINARY, op, _Node(ARGLIST, callee, self.exprlist("E")))
        if code in _UNARY:
            op = self.operator_name()
            return _Node(UNARY, op, self.expression_1())
        if code in _BINARY:
            op = self.operator_name()
            left = self.expression_1()
            right = self.expression_1()
            return _Node(BINARY, op, _Node(ARGLIST, left, right))
        if code in ("dt", "pt"):  # member access: object . member, pointer -> member
            op = self.operator_name()
            left = self.expression_1()
            if self.peek() + self.peek(1) in ("gs", "sr"):
                raise _Fail
            member = self.unqualified_name(None)
            if self.peek() == "I":
                member = _Node(TEMPLATE, member, self.template_args())
            return _Node(BINARY, op, _Node(ARGLIST, left, member))
        raise _Fail

    def exprlist(self, terminator: str) -> _Node:
        if self.peek() == terminator:
            self.i += 1
            return _Node(ARGLIST)
        items: list[_Node] = []
        while True:
            items.append(self.expression())
            if self.peek() == terminator:
                self.i += 1
                return _chain(ARGLIST, items)

    def expr_primary(self) -> _Node:
        self.expect("L")
        if self.peek() in ("_", "Z"):
            node = self.mangled_name(False)
        else:
            t = self.type()
            if t.kind == BUILTIN and t.text == "decltype(nullptr)" and self.peek() == "E":
                self.i += 1
                return t
            if (
                t.kind == BUILTIN and t.num in (0, ord("v"), ord("z")) and t.text != "half"
            ) or t.kind == AUTO:
                raise _Fail  # nullptr, void, auto, decimal and char8/16/32 literals: not read
            negative = self.peek() == "n"
            if negative:
                self.i += 1
            start = self.i
            while self.peek() != "E":
                if self.peek() == "\0":
                    raise _Fail
                self.i += 1
            if self.i == start:
                raise _Fail  # an empty value: libstdc++ refuses it too
            node = _Node(LITERAL, t, _Node(NAME, text=self.s[start : self.i]), num=int(negative))
        self.expect("E")
        return node


def _chain(kind: str, items: list[_Node]) -> _Node:
    head = _Node(kind, items[0])
    cur = head
    for item in items[1:]:
        cur.right = _Node(kind, item)
        cur = cur.right
    return head


def _is_ctor_dtor_or_conversion(node: _Node | None) -> bool:
    while node is not None:
        if node.kind in (QUAL, LOCAL):
            node = node.right
        else:
            return node.kind in (CTOR, DTOR, CONVERSION)
    return False


def _has_return_type(node: _Node | None) -> bool:
    while node is not None:
        if node.kind == LOCAL:
            node = node.right
        elif node.kind in _FNQUALS:
            node = node.left
        else:
            return node.kind == TEMPLATE and not _is_ctor_dtor_or_conversion(node.left)
    return False


class _Mod:
    """A modifier waiting to be printed where the declarator syntax puts it."""

    __slots__ = ("mod", "next", "printed", "templates")

    def __init__(self, mod: _Node, nxt: _Mod | None, templates: _Templates) -> None:
        self.mod = mod
        self.next = nxt
        self.printed = False
        self.templates = templates


# The templates whose arguments template parameters refer to, innermost first.
_Templates = tuple[_Node, "_Templates"] | None


_UNSAVED: object = object()


class _Printer:
    """Prints a parsed name in the GNU toolchain's style (declarators inside out, ``> >``, ``const&``)."""

    def __init__(self) -> None:
        self.out: list[str] = []
        self.mods: _Mod | None = None
        self.templates: _Templates = None
        self.pack_index = 0
        self.lambda_arg = 0
        self.current_template: _Node | None = None
        self.lastc = ""
        self.stack: list[_Node] = []
        self.saved: dict[int, _Templates] = {}

    def w(self, text: str) -> None:
        if text:
            self.out.append(text)
            self.lastc = text[-1]

    def last(self) -> str:
        # the last character appended: like GNU's, not changed when an empty pack takes back its ", "
        return self.lastc

    def lookup(self, param: _Node) -> _Node:
        if self.templates is None:
            raise _Fail
        found = _index(self.templates[0].right, param.num)
        if found is None:
            raise _Fail
        return found

    def comp(self, dc: _Node | None) -> None:
        if dc is None or dc.printing > 1:
            raise _Fail
        k = dc.kind
        if k in _LEAVES:
            self.out.append(dc.text)
            self.lastc = dc.text[-1]
            return
        mark = -1
        if k in _MEMO_KINDS and (dc.pure == 1 or (dc.pure < 0 and _is_pure(dc))):
            # a name without parameters beneath prints the same wherever a substitution repeats it
            if dc.memo is not None:
                self.out.append(dc.memo[0])
                self.lastc = dc.memo[1]
                return
            mark = len(self.out)
        dc.printing += 1
        self.stack.append(dc)
        self._comp(dc)
        self.stack.pop()
        dc.printing -= 1
        if mark >= 0:
            dc.memo = ("".join(self.out[mark:]), self.lastc)

    def _comp(self, dc: _Node) -> None:
        k = dc.kind
        if k in (NAME, SUB_STD, BUILTIN, AUTO):
            self.w(dc.text)
        elif k in (ARGLIST, TARGLIST):
            if dc.left is not None:
                self.comp(dc.left)
            if dc.right is not None:
                self.w(", ")
                mark = len(self.out)
                self.comp(dc.right)
                if len(self.out) == mark:
                    self.out.pop()
        elif k in _MODIFIERS:
            self.modifier(dc)
        elif k in (QUAL, LOCAL):
            self.comp(dc.left)
            self.w("::")
            right = dc.right
            assert right is not None
            if right.kind == DEFAULT_ARG:
                self.w(f"{{default arg#{right.num + 1}}}::")
                right = right.left
            self.comp(right)
        elif k == TYPED:
            self.typed_name(dc)
        elif k == TEMPLATE:
            hold_current, self.current_template = self.current_template, dc
            hold_mods, self.mods = self.mods, None
            self.comp(dc.left)
            self.template_args(dc.right)
            self.mods = hold_mods
            self.current_template = hold_current
        elif k == TPARAM:
            if self.lambda_arg:
                self.w(f"auto:{dc.num + 1}")
                return
            arg = self.lookup(dc)
            if arg.kind == TARGLIST:
                found = _index(arg, self.pack_index)
                if found is None:
                    raise _Fail
                arg = found
            hold = self.templates
            assert hold is not None
            self.templates = hold[1]
            self.comp(arg)
            self.templates = hold
        elif k == CTOR:
            self.comp(dc.left)
        elif k == DTOR:
            self.w("~")
            self.comp(dc.left)
        elif k == TAGGED:
            self.comp(dc.left)
            self.w("[abi:")
            self.comp(dc.right)
            self.w("]")
        elif k == OPERATOR:
            self.w("operator")
            if dc.text[0] in _LOWER:
                self.w(" ")
            self.w(dc.text[:-1] if dc.text.endswith(" ") else dc.text)
        elif k == CONVERSION:
            self.w("operator ")
            self.conversion(dc)
        elif k == VENDOR_TYPE:
            self.comp(dc.left)
        elif k == FUNC:
            if dc.left is not None:
                mod = _Mod(dc, self.mods, self.templates)
                self.mods = mod
                self.comp(dc.left)
                self.mods = mod.next
                if mod.printed:
                    return
                self.w(" ")
            self.function_type(dc, self.mods)
        elif k == ARRAY:
            self.array(dc)
        elif k == PTRMEM:
            mod = _Mod(dc, self.mods, self.templates)
            self.mods = mod
            self.comp(dc.right)
            if not mod.printed:
                self.print_mod(dc)
            self.mods = mod.next
        elif k == LITERAL:
            self.literal(dc)
        elif k == LAMBDA:
            self.w("{lambda(")
            self.lambda_arg += 1
            self.comp(dc.left)
            self.lambda_arg -= 1
            self.w(f")#{dc.num + 1}}}")
        elif k == UNNAMED:
            self.w(f"{{unnamed type#{dc.num + 1}}}")
        elif k == PACK:
            pack = self.find_pack(dc.left)
            if pack is None:
                self.subexpr(dc.left)
                self.w("...")
                return
            length = _pack_length(pack)
            for i in range(length):
                self.pack_index = i
                self.comp(dc.left)
                if i < length - 1:
                    self.w(", ")
        elif k == DECLTYPE:
            self.w("decltype (")
            self.comp(dc.left)
            self.w(")")
        elif k == INIT_LIST:
            if dc.left is not None:
                self.comp(dc.left)
            self.w("{")
            self.comp(dc.right)
            self.w("}")
        elif k == UNARY:
            op = dc.left
            operand = dc.right
            assert op is not None and operand is not None
            if (
                op.text == "&"
                and op.num == 1
                and operand.kind == TYPED
                and operand.left is not None
                and operand.left.kind == QUAL
                and operand.right is not None
                and operand.right.kind == FUNC
            ):
                operand = operand.left  # the address of a function: no parameter list
            self.w(op.text)
            if dc.num == 1:
                self.w("(")  # sizeof (type): always in parentheses
                self.comp(operand)
                self.w(")")
            else:
                self.subexpr(operand)
        elif k == BINARY:
            op = dc.left
            args = dc.right
            assert op is not None and args is not None
            wrap = op.text == ">"
            if wrap:
                self.w("(")
            callee = args.left
            if op.text == "()" and callee is not None and callee.kind == TYPED:
                if callee.right is None or callee.right.kind != FUNC:
                    raise _Fail
                callee = callee.left  # a function called: its name, not its parameter types
            self.subexpr(callee)
            if op.text != "()":
                self.w(op.text)
            self.subexpr(args.right)
            if wrap:
                self.w(")")
        elif k == FPARAM:
            self.w("this" if dc.num == 0 else f"{{parm#{dc.num}}}")
        elif k == CLONE:
            self.comp(dc.left)
            self.w(" [clone ")
            self.comp(dc.right)
            self.w("]")
        elif k == SPECIAL:
            self.w(dc.text)
            self.comp(dc.left)
        elif k == CTOR_VTABLE:
            self.w("construction vtable for ")
            self.comp(dc.left)
            self.w("-in-")
            self.comp(dc.right)
        else:
            raise _Fail

    def subexpr(self, dc: _Node | None) -> None:
        simple = dc is not None and dc.kind in (NAME, QUAL, INIT_LIST, FPARAM)
        if not simple:
            self.w("(")
        self.comp(dc)
        if not simple:
            self.w(")")

    def template_args(self, args: _Node | None) -> None:
        if self.last() == "<":
            self.w(" ")
        self.w("<")
        self.comp(args)
        if self.last() == ">":
            self.w(" ")
        self.w(">")

    def modifier(self, dc: _Node) -> None:
        k = dc.kind
        inner = dc.left
        restore: object = _UNSAVED
        if k in _CV:
            p = self.mods
            while p is not None:
                if not p.printed:
                    if p.mod.kind not in _CV:
                        break
                    if p.mod.kind == k:
                        self.comp(dc.left)
                        return
                p = p.next
        elif (k in (REF, RREF)) and inner is not None:
            sub = inner
            if not self.lambda_arg and sub.kind == TPARAM:
                scope = self.saved.get(id(sub), _UNSAVED)
                if scope is _UNSAVED:
                    self.saved[id(sub)] = self.templates
                elif not self.beneath(sub, dc):
                    restore = self.templates
                    self.templates = scope  # type: ignore[assignment]
                arg = self.lookup(sub)
                if arg.kind == TARGLIST:
                    found = _index(arg, self.pack_index)
                    if found is None:
                        raise _Fail
                    arg = found
                sub = arg
            if sub.kind == REF or sub.kind == k:
                dc = sub
                inner = sub.left
            elif sub.kind == RREF:
                inner = sub.left
        mod = _Mod(dc, self.mods, self.templates)
        self.mods = mod
        self.comp(inner)
        if not mod.printed:
            self.print_mod(dc)
        self.mods = mod.next
        if restore is not _UNSAVED:
            self.templates = restore  # type: ignore[assignment]

    def beneath(self, sub: _Node, dc: _Node) -> bool:
        """Whether printing is already inside ``sub`` (or inside another visit of ``dc``)."""
        stack = self.stack
        top = len(stack) - 1
        return any(stack[i] is sub or (stack[i] is dc and i != top) for i in range(top, -1, -1))

    def typed_name(self, dc: _Node) -> None:
        hold_mods = self.mods
        self.mods = None
        pushed: list[_Mod] = []
        name = dc.left
        while name is not None:
            mod = _Mod(name, self.mods, self.templates)
            self.mods = mod
            pushed.append(mod)
            if name.kind not in _FNQUALS:
                break
            name = name.left
        if name is None:
            raise _Fail
        if name.kind == LOCAL:
            name = name.right
            if name is not None and name.kind == DEFAULT_ARG:
                name = name.left
            while name is not None and name.kind in _FNQUALS:
                mod = _Mod(name, self.mods, self.templates)
                self.mods = mod
                pushed.append(mod)
                name = name.left
            if name is None:
                raise _Fail
        if len(pushed) > 4:
            raise _Fail
        hold_templates = self.templates
        if name.kind == TEMPLATE:
            self.templates = (name, self.templates)
        self.comp(dc.right)
        self.templates = hold_templates
        for mod in reversed(pushed):
            if not mod.printed:
                self.w(" ")
                self.print_mod(mod.mod)
        self.mods = hold_mods

    def function_type(self, dc: _Node, mods: _Mod | None) -> None:
        need_paren = False
        need_space = False
        p = mods
        while p is not None and not p.printed:
            k = p.mod.kind
            if k in (POINTER, REF, RREF):
                need_paren = True
            elif k in _CV or k in (VENDOR_QUAL, COMPLEX, IMAGINARY, PTRMEM):
                need_space = True
                need_paren = True
            if need_paren:
                break
            p = p.next
        if need_paren:
            if not need_space and self.last() not in ("(", "*"):
                need_space = True
            if need_space and self.last() != " ":
                self.w(" ")
            self.w("(")
        hold_mods = self.mods
        self.mods = None
        self.mod_list(mods, False)
        if need_paren:
            self.w(")")
        self.w("(")
        if dc.right is not None:
            self.comp(dc.right)
        self.w(")")
        self.mod_list(mods, True)
        self.mods = hold_mods

    def array(self, dc: _Node) -> None:
        hold_mods = self.mods
        first = _Mod(dc, self.mods, self.templates)
        self.mods = first
        copies: list[_Mod] = []
        p = hold_mods
        while p is not None and p.mod.kind in _CV:
            if not p.printed:
                if len(copies) >= 3:
                    raise _Fail
                copy = _Mod(p.mod, self.mods, p.templates)
                self.mods = copy
                p.printed = True
                copies.append(copy)
            p = p.next
        self.comp(dc.right)
        self.mods = hold_mods
        if first.printed:
            return
        for copy in reversed(copies):
            self.print_mod(copy.mod)
        self.array_type(dc, self.mods)

    def array_type(self, dc: _Node, mods: _Mod | None) -> None:
        need_space = True
        if mods is not None:
            need_paren = False
            p: _Mod | None = mods
            while p is not None:
                if not p.printed:
                    if p.mod.kind == ARRAY:
                        need_space = False
                    else:
                        need_paren = True
                        need_space = True
                    break
                p = p.next
            if need_paren:
                self.w(" (")
            self.mod_list(mods, False)
            if need_paren:
                self.w(")")
        if need_space:
            self.w(" ")
        self.w("[")
        if dc.left is not None:
            self.comp(dc.left)
        self.w("]")

    def mod_list(self, mods: _Mod | None, suffix: bool) -> None:
        while mods is not None:
            if mods.printed or (not suffix and mods.mod.kind in _FNQUALS):
                mods = mods.next
                continue
            mods.printed = True
            hold = self.templates
            self.templates = mods.templates
            k = mods.mod.kind
            if k == FUNC:
                self.function_type(mods.mod, mods.next)
                self.templates = hold
                return
            if k == ARRAY:
                self.array_type(mods.mod, mods.next)
                self.templates = hold
                return
            if k == LOCAL:
                hold_mods = self.mods
                self.mods = None
                self.comp(mods.mod.left)
                self.mods = hold_mods
                self.w("::")
                right = mods.mod.right
                assert right is not None
                if right.kind == DEFAULT_ARG:
                    self.w(f"{{default arg#{right.num + 1}}}::")
                    right = right.left
                while right is not None and right.kind in _FNQUALS:
                    right = right.left
                self.comp(right)
                self.templates = hold
                return
            self.print_mod(mods.mod)
            self.templates = hold
            mods = mods.next

    def print_mod(self, mod: _Node) -> None:
        k = mod.kind
        suffix = _SUFFIXES.get(k)
        if suffix is not None:
            self.w(suffix)
            if k in (NOEXCEPT, THROW) and mod.right is not None:
                self.w("(")
                self.comp(mod.right)
                self.w(")")
        elif k == VENDOR_QUAL:
            self.w(" ")
            self.comp(mod.right)
        elif k == PTRMEM:
            if self.last() != "(":
                self.w(" ")
            self.comp(mod.left)
            self.w("::*")
        else:
            self.comp(mod)

    def conversion(self, dc: _Node) -> None:
        pushed = self.current_template is not None
        hold = self.templates
        if self.current_template is not None:
            self.templates = (self.current_template, self.templates)
        target = dc.left
        assert target is not None
        if target.kind != TEMPLATE:
            self.comp(target)
            self.templates = hold
        else:
            self.comp(target.left)
            if pushed:
                self.templates = hold
            self.template_args(target.right)
        self.templates = hold

    def literal(self, dc: _Node) -> None:
        t = dc.left
        value = dc.right
        assert t is not None and value is not None
        code = chr(t.num) if t.kind == BUILTIN and t.num else ""
        if code in _INT_SUFFIX:
            if dc.num:
                self.w("-")
            self.w(value.text)
            if _INT_SUFFIX[code]:
                self.w(_INT_SUFFIX[code])
            return
        if code == "b" and len(value.text) == 1 and not dc.num and value.text in "01":
            self.w("false" if value.text == "0" else "true")
            return
        is_float = t.kind == BUILTIN and (code in ("d", "e", "f", "g") or t.text == "half")
        self.w("(")
        self.comp(t)
        self.w(")")
        if dc.num:
            self.w("-")
        if is_float:
            self.w("[")
        if value.text:
            self.w(value.text)
        if is_float:
            self.w("]")

    def find_pack(self, dc: _Node | None) -> _Node | None:
        if dc is None:
            return None
        k = dc.kind
        if k == TPARAM:
            arg = self.lookup(dc)
            return arg if arg.kind == TARGLIST else None
        if k in (PACK, LAMBDA, NAME, TAGGED, OPERATOR, BUILTIN, SUB_STD, FPARAM, UNNAMED, DEFAULT_ARG):
            return None
        if k in (CTOR, DTOR):
            return self.find_pack(dc.left)
        return self.find_pack(dc.left) or self.find_pack(dc.right)


_IMPURE = frozenset({TPARAM, FPARAM, CONVERSION})
# Kinds whose printing neither reads nor prints the modifiers around them.
_MEMO_KINDS = frozenset({TEMPLATE, QUAL, LOCAL})
# Kinds that print their text and nothing else (never empty).
_LEAVES = frozenset({NAME, SUB_STD, BUILTIN, AUTO})


def _is_pure(node: _Node) -> bool:
    """Whether nothing beneath ``node`` depends on where it is printed (template or function parameters)."""
    if node.pure < 0:
        pure = node.kind not in _IMPURE
        for child in (node.left, node.right):
            if pure and child is not None and not _is_pure(child):
                pure = False
        node.pure = int(pure)
    return node.pure == 1


def _index(args: _Node | None, i: int) -> _Node | None:
    """The i-th element of a template argument list (None past its end)."""
    a = args
    while a is not None:
        if a.kind != TARGLIST:
            return None
        if i <= 0:
            break
        i -= 1
        a = a.right
    if i != 0 or a is None:
        return None
    return a.left


def _pack_length(pack: _Node) -> int:
    count = 0
    a: _Node | None = pack
    while a is not None and a.kind == TARGLIST and a.left is not None:
        count += 1
        a = a.right
    return count


def _mangled(name: str) -> bool:
    return name.startswith("_Z") and len(name) > 2


# libstdc++ refuses names longer than this (its guard against deep recursion); so do we, to stay equal.
_LONGEST = 1024


def _demangle_base(name: str) -> str | None:
    """The demangled form of a mangled name without a symbol version; None where it is not read."""
    if not name.isascii() or len(name) > _LONGEST:
        return None
    parser = _Parser(name)
    try:
        tree = parser.mangled_name(True)
        if parser.i != parser.n:
            return None
        printer = _Printer()
        printer.comp(tree)
    except (_Fail, RecursionError):
        return None
    return "".join(printer.out)


@lru_cache(maxsize=65536)
def demangle(name: str) -> str:
    """The demangled form of an Itanium-mangled name; the input unchanged when it is not one or not read."""
    if not _mangled(name):
        return name
    base, sep, version = name.partition("@")
    result = _demangle_base(base)
    if result is None:
        return name
    return f"{result}{sep}{version}" if sep else result


def demangle_many(names: Iterable[str]) -> dict[str, str]:
    """``{name: demangle(name)}`` for many names at once."""
    return {name: demangle(name) for name in names}


# A C++ name a line of text shows demangled: ``{demangle:_ZN3c105ErrorC2Ev}`` (see :func:`cxx`).
_MARKED = re.compile(r"\{demangle:([^{}\s]+)\}")


def cxx(name: str) -> str:
    """``name`` marked in a line of text to be shown demangled (:func:`render_text`); a C name as it is."""
    return f"{{demangle:{name}}}" if _mangled(name) else name


def render_text(text: str) -> str:
    """``text`` with each name marked by :func:`cxx` demangled, for display.

    Stored results keep the marked mangled names; the demangled form is produced only here, when a line
    is shown. Unmarked names (a loader's own message) are left as they are."""
    if "{demangle:" not in text:
        return text
    return _MARKED.sub(lambda m: demangle(m.group(1)), text)


_OPERATOR_WORD = re.compile(r"(?:^|(?<=[\s:]))operator(?![A-Za-z0-9_])")
_CLONE_SUFFIX = re.compile(r"(?:\s*\[clone [^\]]*\])+$")


def _params_open(text: str, close: int) -> int | None:
    """Index of the '(' matching the ')' at ``close``, scanning backwards over balanced parentheses."""
    depth = 0
    for i in range(close, -1, -1):
        if text[i] == ")":
            depth += 1
        elif text[i] == "(":
            depth -= 1
            if depth == 0:
                return i
    return None


def _strip_return_type(head: str) -> str:
    """Drop a leading return type (``void ns::f<int>`` -> ``ns::f<int>``), keeping operator names whole."""
    stop = len(head)
    operator = None
    for match in _OPERATOR_WORD.finditer(head):
        operator = match.start()
    if operator is not None:
        stop = operator
    depth = 0
    cut = 0
    for i, char in enumerate(head[:stop]):
        if char in "(<[{":
            depth += 1
        elif char in ")>]}":
            depth = max(depth - 1, 0)
        elif char == " " and depth == 0:
            cut = i + 1
    return head[cut:]


def split_signature(name: str) -> tuple[str, str] | None:
    """``(qualified function name, parameter list)`` of a mangled or demangled function name.

    ``_ZN3c104cuda29c10_cuda_check_implementationEiPKcS2_ib`` gives
    ``("c10::cuda::c10_cuda_check_implementation", "int, char const*, char const*, int, bool")``.
    None when the name has no parameter list (data symbols, plain C names, names not read).
    """
    text = demangle(name) if _mangled(name) else name
    text = _CLONE_SUFFIX.sub("", text.partition("@")[0]).rstrip()
    close = text.rfind(")")
    if close < 0:
        return None
    open_ = _params_open(text, close)
    if open_ is None or open_ == 0:
        return None
    qualified = _strip_return_type(text[:open_].rstrip())
    if not qualified:
        return None
    return qualified, text[open_ + 1 : close]


_CXX11_MANGLED = ("B5cxx11", "St7__cxx11", "NSt7__cxx11")
_OLD_DEMANGLED = re.compile(
    r"std::(?:string|wstring|basic_string<|basic_(?:i|o)?stringstream<|basic_stringbuf<|list<)"
)


def abi_tag_kind(mangled: str) -> AbiTagKind | None:
    """Which libstdc++ std::string ABI a mangled name commits to: ``cxx11``, ``old`` or None (neither).

    New ABI: ``B5cxx11`` tags or ``std::__cxx11::`` types. Old ABI: ``Ss`` / ``St12basic_string`` (and
    the other pre-C++11 string and list types) without ``__cxx11``.
    """
    if not _mangled(mangled):
        return None
    if any(marker in mangled for marker in _CXX11_MANGLED):
        return "cxx11"
    text = demangle(mangled)
    if text == mangled.partition("@")[0] or text == mangled:
        return "old" if ("Ss" in mangled or "St12basic_string" in mangled) else None
    if "std::__cxx11::" in text or "[abi:cxx11]" in text:
        return "cxx11"
    return "old" if _OLD_DEMANGLED.search(text) else None


__all__ = [
    "AbiTagKind",
    "abi_tag_kind",
    "cxx",
    "demangle",
    "demangle_many",
    "render_text",
    "split_signature",
]
