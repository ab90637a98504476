"""The LaTeX of a write-up's formulas as MathML Core, which every current browser renders with no script and no font
of its own (Chromium 109+, Firefox, Safari).

Only the TeX the write-up templates produce is read: letters, numbers (``2{,}498{,}560``), operators, ``_`` and
``^``, groups, ``\\mathrm``/``\\mathit``/``\\text``, ``\\frac``, ``\\sqrt``, ``\\hat``, ``\\left``/``\\right`` (with
parentheses, brackets, bars, ceilings and floors), the spaces
``\\,`` ``\\ `` ``\\quad``, a few symbols, and ``aligned`` blocks (a table whose columns align right and left, as
in LaTeX). Anything else is refused by name, so that a template using a command this module does not know fails
in the tests instead of showing TeX to a reader. Every piece of text is escaped. The TeX itself goes along as an
``application/x-tex`` annotation, which browsers do not show and which copy-paste and screen readers can use.
"""

from __future__ import annotations

import re
from html import escape

from ..errors import LlmcountError

GREEK = (  # the lower-case letters from U+03B1, in Unicode's order (varsigma is the final sigma, U+03C2)
    "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho varsigma sigma tau "
    "upsilon phi chi psi omega"
)
SYMBOLS = {  # command -> (element, text)
    "times": ("mo", "×"),
    "cdot": ("mo", "⋅"),
    "approx": ("mo", "≈"),
    "le": ("mo", "≤"),
    "leq": ("mo", "≤"),
    "ge": ("mo", "≥"),
    "geq": ("mo", "≥"),
    "ne": ("mo", "≠"),
    "neq": ("mo", "≠"),
    "to": ("mo", "→"),
    "sum": ("mo", "∑"),
    "prod": ("mo", "∏"),
    "top": ("mo", "⊤"),
    "lceil": ("mo", "⌈"),
    "rceil": ("mo", "⌉"),
    "lfloor": ("mo", "⌊"),
    "rfloor": ("mo", "⌋"),
    "ldots": ("mi", "…"),
    "cdots": ("mi", "⋯"),
    "infty": ("mi", "∞"),
    **{name: ("mi", chr(0x3B1 + i)) for i, name in enumerate(GREEK.split())},
    **{
        g: ("mi", chr(c))
        for g, c in (
            ("Gamma", 0x393),
            ("Delta", 0x394),
            ("Theta", 0x398),
            ("Lambda", 0x39B),
            ("Pi", 0x3A0),
            ("Sigma", 0x3A3),
            ("Phi", 0x3A6),
            ("Psi", 0x3A8),
            ("Omega", 0x3A9),
        )
    },
}
SPACES = {",": "0.1667em", ":": "0.2222em", ";": "0.2778em", " ": "0.25em", "quad": "1em", "qquad": "2em"}
FENCES = {"(": "(", ")": ")", "[": "[", "]": "]", "|": "|", ".": "", "\\{": "{", "\\}": "}", "\\|": "‖"}
FENCES.update({"\\lceil": "⌈", "\\rceil": "⌉", "\\lfloor": "⌊", "\\rfloor": "⌋"})
OPERATOR_NAMES = ("max", "min", "log", "exp", "ln")
OPERATORS = set("+-=()[]<>/|,;:!*'")
MAX_DEPTH = 60
NBSP = "\u00a0"

_TOKEN = re.compile(
    r"\\\\|\\[a-zA-Z]+|\\[^a-zA-Z]|\d+(?:\{,\}\d{3})*(?:\.\d+)?|\s+|.",
    re.S,
)


def _italic(text: str) -> str:
    """Latin letters as the Unicode mathematical italic ones (MathML Core's way to slant a word of several letters)."""
    out = []
    for c in text:
        if c == "h":
            out.append("\u210e")
        elif "a" <= c <= "z":
            out.append(chr(0x1D44E + ord(c) - ord("a")))
        elif "A" <= c <= "Z":
            out.append(chr(0x1D434 + ord(c) - ord("A")))
        else:
            out.append(c)
    return "".join(out)


class _Parser:
    def __init__(self, tex: str) -> None:
        self.tex = tex
        self.tokens = _TOKEN.findall(tex)  # spaces kept for text arguments, skipped in math
        self.i = 0
        self.depth = 0

    def fail(self, why: str) -> LlmcountError:
        return LlmcountError(
            f"internal error: cannot render the write-up's math as MathML ({why}) in: {self.tex[:200]}"
        )

    def peek(self) -> str | None:
        while self.i < len(self.tokens) and self.tokens[self.i].isspace():
            self.i += 1
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self) -> str:
        token = self.peek()
        if token is None:
            raise self.fail("unexpected end")
        self.i += 1
        return token

    def raw_group(self) -> str:
        """The text of a ``{…}`` argument as written (for ``\\mathrm``, ``\\text``), spaces kept."""
        if self.peek() != "{":
            return self.take()
        # find the matching brace in the token stream, then take the source text between
        depth, parts = 0, []
        while True:
            if self.i >= len(self.tokens):
                raise self.fail("unexpected end")
            token = self.tokens[self.i]
            self.i += 1
            if token == "{":
                depth += 1
                if depth == 1:
                    continue
            elif token == "}":
                depth -= 1
                if depth == 0:
                    break
            parts.append(token)
        text = "".join(parts)
        if "\\" in text or "{" in text:
            raise self.fail(f"a text argument holds TeX: {text[:40]}")
        return text

    def rows(self, stop: str | None) -> list[list[str]]:
        """Rows of cells of MathML, up to ``stop`` (``}``, ``\\end``) or the end."""
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.fail("nested too deep")
        rows: list[list[str]] = [[]]
        cell: list[str] = []
        while True:
            token = self.peek()
            if token is None:
                if stop is not None:
                    raise self.fail(f"missing {stop}")
                break
            if token == stop:
                self.i += 1
                break
            if token == "&":
                self.i += 1
                rows[-1].append(_mrow(cell))
                cell = []
                continue
            if token == "\\\\":
                self.i += 1
                rows[-1].append(_mrow(cell))
                rows.append([])
                cell = []
                continue
            cell.append(self.scripted())
        rows[-1].append(_mrow(cell))
        self.depth -= 1
        return rows

    def group(self, stop: str | None) -> str:
        rows = self.rows(stop)
        if len(rows) != 1 or len(rows[0]) != 1:
            raise self.fail("& or \\\\ outside an aligned block")
        return rows[0][0]

    def argument(self) -> str:
        if self.peek() == "{":
            self.i += 1
            return self.group("}")
        return self.atom()

    def scripted(self) -> str:
        base = self.atom()
        sub = sup = None
        while self.peek() in ("_", "^"):
            mark = self.take()
            if mark == "_" and sub is None:
                sub = self.argument()
            elif mark == "^" and sup is None:
                sup = self.argument()
            else:
                raise self.fail(f"double {mark}")
        if sub is not None and sup is not None:
            return f"<msubsup>{base}{sub}{sup}</msubsup>"
        if sub is not None:
            return f"<msub>{base}{sub}</msub>"
        if sup is not None:
            return f"<msup>{base}{sup}</msup>"
        return base

    def atom(self) -> str:
        token = self.take()
        if token == "{":
            return self.group("}")
        if token[0].isdigit():
            return f"<mn>{escape(token.replace('{,}', ','))}</mn>"
        if token.startswith("\\"):
            return self.command(token[1:])
        if token in ("}", "&", "_", "^"):
            raise self.fail(f"unexpected {token}")
        if token.isalpha() and token.isascii():
            return f"<mi>{token}</mi>"
        if token in OPERATORS:
            text = "\u2212" if token == "-" else token
            stretch = ' stretchy="false"' if token in "()[]|" else ""
            return f"<mo{stretch}>{escape(text)}</mo>"
        if token == ".":
            return "<mn>.</mn>"
        return f"<mi>{escape(token)}</mi>"

    def command(self, name: str) -> str:
        if name in SPACES:
            return f'<mspace width="{SPACES[name]}"></mspace>'
        if name in SYMBOLS:
            tag, text = SYMBOLS[name]
            return f"<{tag}>{text}</{tag}>"
        if name in ("{", "}", "%", "$", "#", "&", "_"):
            return f"<mo>{escape(name)}</mo>"
        if name == "mathrm":
            return f'<mi mathvariant="normal">{escape(self.raw_group())}</mi>'
        if name == "mathit":
            return f"<mi>{escape(_italic(self.raw_group()))}</mi>"
        if name == "text":
            text = escape(self.raw_group()).replace(" ", NBSP)
            return f"<mtext>{text}</mtext>"
        if name in OPERATOR_NAMES:
            return f"<mi>{name}</mi>"
        if name == "sqrt":
            return f"<msqrt>{self.argument()}</msqrt>"
        if name == "frac":
            return f"<mfrac>{self.argument()}{self.argument()}</mfrac>"
        if name == "hat":
            return f'<mover accent="true">{self.argument()}<mo>^</mo></mover>'
        if name in ("left", "right"):
            fence = self.take()
            if fence not in FENCES:
                raise self.fail(f"\\{name}{fence}")
            if not FENCES[fence]:
                return ""
            return f'<mo fence="true" stretchy="true" symmetric="false">{escape(FENCES[fence])}</mo>'
        if name == "begin":
            env = self.raw_group()
            if env != "aligned":
                raise self.fail(f"environment {env}")
            rows = self.rows("\\end")
            if self.raw_group() != env:
                raise self.fail(f"\\begin{{{env}}} closed by another environment")
            body = "".join("<mtr>" + "".join(f"<mtd>{cell}</mtd>" for cell in row) + "</mtr>" for row in rows)
            return f'<mtable class="aligned">{body}</mtable>'
        raise self.fail(f"\\{name} is not a command this renderer knows; --math katex renders any TeX")


def _mrow(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"<mrow>{''.join(items)}</mrow>"


def mathml(tex: str, display: bool = False) -> str:
    """``tex`` (one formula of a write-up) as a ``<math>`` element of an HTML page."""
    body = _Parser(tex).group(None)
    mode = "block" if display else "inline"
    annotation = f'<annotation encoding="application/x-tex">{escape(tex.strip())}</annotation>'
    return f'<math display="{mode}"><semantics>{body}{annotation}</semantics></math>'


STYLE = """
math { font-family: "Latin Modern Math", "STIX Two Math", "Cambria Math", "Noto Sans Math", math; }
math[display="block"] { margin: 0.4rem 0; }
mtable.aligned mtd { padding: 0.15em 0; }
mtable.aligned mtd:nth-child(odd) { text-align: right; }
mtable.aligned mtd:nth-child(even) { text-align: left; }
"""
"""What the page adds for its MathML: a math font where one is installed, and aligned blocks set as LaTeX sets them."""
