/**
 * The workflow expression language (`${{ … }}`), a small tree-walking evaluator: no `eval`, no
 * `Function`. The subset and its rules are in docs/ci.md ("Expressions"): literals (null, true,
 * false, numbers, 'strings' with '' for a quote), `!`, `<`, `<=`, `>`, `>=`, `==`, `!=`, `&&`,
 * `||`, parentheses, property access (`a.b`, `a['b']`, `a.*.b`) and the functions `success()`,
 * `failure()`, `cancelled()`, `always()`, `contains`, `startsWith`, `endsWith`, `format`, `join`,
 * `toJSON`, `fromJSON`. Comparison and equality follow GitHub Actions: values of different types
 * are compared as numbers, strings case-insensitively.
 */

export type Value = null | boolean | number | string | Value[] | { [key: string]: Value };

/** A job's or step's state as the status functions see it. */
export type JobState = 'success' | 'failure' | 'cancelled';

export interface ExprContext {
  /** Contexts by name (`weft`, `github`, `env`, `vars`, `secrets`, `matrix`, `needs`, …). */
  contexts: Record<string, Value>;
  /** What `success()`, `failure()` and `cancelled()` answer; absent: the functions are refused. */
  state?: JobState;
}

export class ExpressionError extends Error {
  constructor(
    message: string,
    readonly expression: string,
  ) {
    super(message);
  }
}

type Node =
  | { t: 'lit'; v: Value }
  | { t: 'ctx'; name: string }
  | { t: 'prop'; obj: Node; key: Node }
  | { t: 'star'; obj: Node }
  | { t: 'not'; e: Node }
  | { t: 'bin'; op: string; l: Node; r: Node }
  | { t: 'call'; name: string; args: Node[] };

type Token =
  | { k: 'num'; v: number; at: number }
  | { k: 'str'; v: string; at: number }
  | { k: 'id'; v: string; at: number }
  | { k: 'op'; v: string; at: number }
  | { k: 'end'; at: number };

const OPS = ['==', '!=', '<=', '>=', '&&', '||', '<', '>', '!', '(', ')', '[', ']', '.', ',', '*'];

function tokenize(src: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src.charAt(i);
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    if (c === "'") {
      let s = '';
      let j = i + 1;
      for (;;) {
        if (j >= src.length) throw new ExpressionError(`unterminated string at position ${i + 1}`, src);
        if (src[j] === "'") {
          if (src[j + 1] === "'") {
            s += "'";
            j += 2;
            continue;
          }
          break;
        }
        s += src[j++];
      }
      out.push({ k: 'str', v: s, at: i });
      i = j + 1;
      continue;
    }
    const num = /^(?:0x[0-9a-fA-F]+|-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)/.exec(src.slice(i));
    if (num && (c !== '-' || /[\d.]/.test(src[i + 1] ?? ''))) {
      const prev = out.at(-1);
      // after a value, `.5` is not a number but a property access
      if (!(c === '.' && prev && (prev.k === 'id' || (prev.k === 'op' && (prev.v === ')' || prev.v === ']'))))) {
        out.push({ k: 'num', v: Number(num[0]), at: i });
        i += num[0].length;
        continue;
      }
    }
    const id = /^[A-Za-z_][A-Za-z0-9_-]*/.exec(src.slice(i));
    if (id) {
      out.push({ k: 'id', v: id[0], at: i });
      i += id[0].length;
      continue;
    }
    const op = OPS.find((o) => src.startsWith(o, i));
    if (!op) throw new ExpressionError(`unexpected character '${c}' at position ${i + 1}`, src);
    out.push({ k: 'op', v: op, at: i });
    i += op.length;
  }
  out.push({ k: 'end', at: src.length });
  return out;
}

const MAX_DEPTH = 50;

class Parser {
  private i = 0;
  private depth = 0;
  constructor(
    private readonly toks: Token[],
    private readonly src: string,
  ) {}
  private peek(): Token {
    return this.toks[this.i] ?? { k: 'end', at: this.src.length };
  }
  private isOp(v: string): boolean {
    const t = this.peek();
    return t.k === 'op' && t.v === v;
  }
  private fail(what: string): never {
    const t = this.peek();
    const found = t.k === 'end' ? 'the end' : `'${t.k === 'str' ? `'${t.v}'` : String(t.v)}'`;
    throw new ExpressionError(`${what}, found ${found} at position ${t.at + 1}`, this.src);
  }
  private expect(v: string): void {
    if (!this.isOp(v)) this.fail(`expected '${v}'`);
    this.i++;
  }
  parse(): Node {
    if (this.peek().k === 'end') throw new ExpressionError('empty expression', this.src);
    const n = this.or();
    if (this.peek().k !== 'end') this.fail('unexpected token');
    return n;
  }
  private or(): Node {
    let l = this.and();
    while (this.isOp('||')) {
      this.i++;
      l = { t: 'bin', op: '||', l, r: this.and() };
    }
    return l;
  }
  private and(): Node {
    let l = this.eq();
    while (this.isOp('&&')) {
      this.i++;
      l = { t: 'bin', op: '&&', l, r: this.eq() };
    }
    return l;
  }
  private eq(): Node {
    let l = this.cmp();
    while (this.isOp('==') || this.isOp('!=')) {
      const op = (this.toks[this.i++] as { v: string }).v;
      l = { t: 'bin', op, l, r: this.cmp() };
    }
    return l;
  }
  private cmp(): Node {
    let l = this.unary();
    while (this.isOp('<') || this.isOp('<=') || this.isOp('>') || this.isOp('>=')) {
      const op = (this.toks[this.i++] as { v: string }).v;
      l = { t: 'bin', op, l, r: this.unary() };
    }
    return l;
  }
  private unary(): Node {
    if (this.isOp('!')) {
      this.i++;
      if (++this.depth > MAX_DEPTH) throw new ExpressionError('expression nested too deeply', this.src);
      const e = this.unary();
      this.depth--;
      return { t: 'not', e };
    }
    return this.postfix(this.primary());
  }
  private postfix(n: Node): Node {
    for (;;) {
      if (this.isOp('.')) {
        this.i++;
        const t = this.peek();
        if (t.k === 'id') {
          this.i++;
          n = { t: 'prop', obj: n, key: { t: 'lit', v: t.v } };
        } else if (t.k === 'op' && t.v === '*') {
          this.i++;
          n = { t: 'star', obj: n };
        } else this.fail("expected a property name after '.'");
      } else if (this.isOp('[')) {
        this.i++;
        if (this.isOp('*')) {
          this.i++;
          this.expect(']');
          n = { t: 'star', obj: n };
          continue;
        }
        const key = this.or();
        this.expect(']');
        n = { t: 'prop', obj: n, key };
      } else return n;
    }
  }
  private primary(): Node {
    const t = this.peek();
    if (t.k === 'num' || t.k === 'str') {
      this.i++;
      return { t: 'lit', v: t.v };
    }
    if (t.k === 'op' && t.v === '(') {
      this.i++;
      if (++this.depth > MAX_DEPTH) throw new ExpressionError('expression nested too deeply', this.src);
      const n = this.or();
      this.depth--;
      this.expect(')');
      return n;
    }
    if (t.k === 'id') {
      this.i++;
      if (t.v === 'true' || t.v === 'false') return { t: 'lit', v: t.v === 'true' };
      if (t.v === 'null') return { t: 'lit', v: null };
      if (this.isOp('(')) {
        this.i++;
        const args: Node[] = [];
        if (!this.isOp(')')) {
          for (;;) {
            args.push(this.or());
            if (this.isOp(',')) {
              this.i++;
              continue;
            }
            break;
          }
        }
        this.expect(')');
        checkCall(t.v, args.length, this.src);
        return { t: 'call', name: t.v, args };
      }
      return { t: 'ctx', name: t.v };
    }
    this.fail('expected a value');
  }
}

/** Arity of each function: [min, max]. */
const FUNCTIONS: Record<string, [number, number]> = {
  success: [0, 0],
  failure: [0, 0],
  cancelled: [0, 0],
  always: [0, 0],
  contains: [2, 2],
  startswith: [2, 2],
  endswith: [2, 2],
  format: [1, 100],
  join: [1, 2],
  tojson: [1, 1],
  fromjson: [1, 1],
};

function checkCall(name: string, n: number, src: string): void {
  const arity = FUNCTIONS[name.toLowerCase()];
  if (!arity) throw new ExpressionError(`unknown function '${name}'`, src);
  if (n < arity[0] || n > arity[1]) {
    const want = arity[0] === arity[1] ? `${arity[0]}` : arity[1] >= 100 ? `at least ${arity[0]}` : `${arity[0]} or ${arity[1]}`;
    throw new ExpressionError(`${name}() takes ${want} argument${want.endsWith(' 1') || want === '1' ? '' : 's'}, got ${n}`, src);
  }
}

const STATUS_FUNCTIONS = new Set(['success', 'failure', 'cancelled', 'always']);

/** Parses an expression (without `${{ }}`); throws ExpressionError with the reason. */
export function parseExpression(src: string): Node {
  return new Parser(tokenize(src), src).parse();
}

/** Whether an expression calls a status function (else `if` adds an implicit `success() &&`). */
function usesStatus(n: Node): boolean {
  switch (n.t) {
    case 'call':
      return STATUS_FUNCTIONS.has(n.name.toLowerCase()) || n.args.some(usesStatus);
    case 'prop':
      return usesStatus(n.obj) || usesStatus(n.key);
    case 'star':
      return usesStatus(n.obj);
    case 'not':
      return usesStatus(n.e);
    case 'bin':
      return usesStatus(n.l) || usesStatus(n.r);
    default:
      return false;
  }
}

// ---- values ----

export function truthy(v: Value): boolean {
  if (v === null || v === false || v === '' || v === 0) return false;
  if (typeof v === 'number' && Number.isNaN(v)) return false;
  return true;
}

const kind = (v: Value) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);

export function toNumber(v: Value): number {
  if (v === null) return 0;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'number') return v;
  if (typeof v === 'string') {
    const s = v.trim();
    if (s === '') return 0;
    if (/^0x[0-9a-f]+$/i.test(s)) return Number(s);
    if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(s)) return NaN;
    return Number(s);
  }
  return NaN;
}

/** A value as text: null is '', objects and arrays are 'Object' and 'Array' (use toJSON). */
export function toText(v: Value): string {
  if (v === null) return '';
  if (typeof v === 'string') return v;
  if (typeof v === 'boolean' || typeof v === 'number') {
    if (typeof v === 'number' && Object.is(v, -0)) return '0';
    return String(v);
  }
  return Array.isArray(v) ? 'Array' : 'Object';
}

export function looseEquals(a: Value, b: Value): boolean {
  const ka = kind(a);
  const kb = kind(b);
  if (ka === kb) {
    if (ka === 'string') return (a as string).toUpperCase() === (b as string).toUpperCase();
    if (ka === 'array' || ka === 'object') return a === b;
    return a === b;
  }
  if (ka === 'array' || ka === 'object' || kb === 'array' || kb === 'object') return false;
  return toNumber(a) === toNumber(b);
}

function compare(op: string, a: Value, b: Value): boolean {
  let x: number | string;
  let y: number | string;
  if (typeof a === 'string' && typeof b === 'string') {
    x = a.toUpperCase();
    y = b.toUpperCase();
  } else {
    x = toNumber(a);
    y = toNumber(b);
    if (Number.isNaN(x) || Number.isNaN(y)) return false;
  }
  switch (op) {
    case '<':
      return x < y;
    case '<=':
      return x <= y;
    case '>':
      return x > y;
    default:
      return x >= y;
  }
}

function getProp(obj: Value, key: Value): Value {
  if (obj === null || typeof obj !== 'object') return null;
  if (Array.isArray(obj)) {
    const i = toNumber(key);
    if (!Number.isInteger(i) || i < 0 || i >= obj.length) return null;
    return obj[i] ?? null;
  }
  const k = toText(key);
  if (Object.prototype.hasOwnProperty.call(obj, k)) return obj[k] ?? null;
  // property names are case-insensitive
  const lower = k.toLowerCase();
  for (const name of Object.keys(obj)) if (name.toLowerCase() === lower) return obj[name] ?? null;
  return null;
}

function format(src: string, fmt: string, args: Value[]): string {
  let out = '';
  for (let i = 0; i < fmt.length; i++) {
    const c = fmt[i];
    if (c === '{') {
      if (fmt[i + 1] === '{') {
        out += '{';
        i++;
        continue;
      }
      const m = /^\{(\d+)\}/.exec(fmt.slice(i));
      if (!m) throw new ExpressionError(`format(): invalid placeholder at position ${i + 1} of '${fmt}'`, src);
      const n = Number(m[1]);
      if (n >= args.length) throw new ExpressionError(`format(): '{${n}}' has no argument (${args.length} given)`, src);
      out += toText(args[n] ?? null);
      i += m[0].length - 1;
    } else if (c === '}') {
      if (fmt[i + 1] !== '}') throw new ExpressionError(`format(): a lone '}' at position ${i + 1} of '${fmt}'`, src);
      out += '}';
      i++;
    } else out += c;
  }
  return out;
}

function fromJson(src: string, text: string): Value {
  try {
    return JSON.parse(text) as Value;
  } catch {
    throw new ExpressionError(`fromJSON(): not valid JSON: '${text.length > 40 ? `${text.slice(0, 40)}…` : text}'`, src);
  }
}

function evalNode(n: Node, ctx: ExprContext, src: string): Value {
  switch (n.t) {
    case 'lit':
      return n.v;
    case 'ctx': {
      const found = Object.keys(ctx.contexts).find((k) => k.toLowerCase() === n.name.toLowerCase());
      if (found === undefined) throw new ExpressionError(`unknown context '${n.name}'`, src);
      return ctx.contexts[found] ?? null;
    }
    case 'prop': {
      const obj = evalNode(n.obj, ctx, src);
      const key = evalNode(n.key, ctx, src);
      if (Array.isArray(obj) && n.obj.t === 'star') {
        // `a.*.b`: the property of each element
        return obj.map((e) => getProp(e, key));
      }
      return getProp(obj, key);
    }
    case 'star': {
      const obj = evalNode(n.obj, ctx, src);
      if (obj === null || typeof obj !== 'object') return [];
      return Array.isArray(obj) ? obj : Object.values(obj);
    }
    case 'not':
      return !truthy(evalNode(n.e, ctx, src));
    case 'bin': {
      const l = evalNode(n.l, ctx, src);
      if (n.op === '&&') return truthy(l) ? evalNode(n.r, ctx, src) : l;
      if (n.op === '||') return truthy(l) ? l : evalNode(n.r, ctx, src);
      const r = evalNode(n.r, ctx, src);
      if (n.op === '==') return looseEquals(l, r);
      if (n.op === '!=') return !looseEquals(l, r);
      return compare(n.op, l, r);
    }
    case 'call':
      return call(n.name, n.args, ctx, src);
  }
}

function call(name: string, argNodes: Node[], ctx: ExprContext, src: string): Value {
  const lower = name.toLowerCase();
  if (STATUS_FUNCTIONS.has(lower)) {
    if (lower === 'always') return true;
    if (!ctx.state) throw new ExpressionError(`${name}() is only available in 'if'`, src);
    return ctx.state === lower;
  }
  const args = argNodes.map((a) => evalNode(a, ctx, src));
  const a0 = args[0] ?? null;
  const a1 = args[1] ?? null;
  switch (lower) {
    case 'contains': {
      if (Array.isArray(a0)) return a0.some((e) => looseEquals(e, a1));
      return toText(a0).toUpperCase().includes(toText(a1).toUpperCase());
    }
    case 'startswith':
      return toText(a0).toUpperCase().startsWith(toText(a1).toUpperCase());
    case 'endswith':
      return toText(a0).toUpperCase().endsWith(toText(a1).toUpperCase());
    case 'format':
      return format(src, toText(a0), args.slice(1));
    case 'join': {
      const sep = args.length > 1 ? toText(a1) : ',';
      return Array.isArray(a0) ? a0.map(toText).join(sep) : toText(a0);
    }
    case 'tojson':
      return JSON.stringify(a0, null, 2);
    case 'fromjson':
      return fromJson(src, toText(a0));
  }
  throw new ExpressionError(`unknown function '${name}'`, src);
}

/** Evaluates one expression (the text inside `${{ }}`). */
export function evaluate(src: string, ctx: ExprContext): Value {
  return evalNode(parseExpression(src), ctx, src);
}

/** The `${{ … }}` parts of a text, as [start, end, inner] (end past the closing `}}`). */
export function findExpressions(text: string): Array<[number, number, string]> {
  const out: Array<[number, number, string]> = [];
  let i = 0;
  for (;;) {
    const start = text.indexOf('${{', i);
    if (start < 0) return out;
    let j = start + 3;
    let inString = false;
    for (; j < text.length; j++) {
      if (text[j] === "'") inString = !inString;
      else if (!inString && text.startsWith('}}', j)) break;
    }
    if (j >= text.length) throw new ExpressionError("'${{' without a closing '}}'", text.slice(start));
    out.push([start, j + 2, text.slice(start + 3, j).trim()]);
    i = j + 2;
  }
}

/** The inner expression when a text is exactly one `${{ … }}`, else null. */
function wholeExpression(text: string, parts: Array<[number, number, string]>): string | null {
  const only = parts.length === 1 ? parts[0] : undefined;
  return only && only[0] === 0 && only[1] === text.length ? only[2] : null;
}

/** Checks the syntax of every `${{ }}` in a text (the validator's use); throws ExpressionError. */
export function checkTemplate(text: string): void {
  for (const [, , inner] of findExpressions(text)) parseExpression(inner);
}

/**
 * Replaces each `${{ … }}` in a text by its value as text. A text that is one expression and
 * nothing else keeps the value's type (so `${{ matrix.n }}` stays a number).
 */
export function interpolate(text: string, ctx: ExprContext): Value {
  const parts = findExpressions(text);
  if (parts.length === 0) return text;
  const whole = wholeExpression(text, parts);
  if (whole !== null) return evaluate(whole, ctx);
  let out = '';
  let at = 0;
  for (const [start, end, inner] of parts) {
    out += text.slice(at, start) + toText(evaluate(inner, ctx));
    at = end;
  }
  return out + text.slice(at);
}

/** `interpolate` as text (env values, run scripts, names). */
export function interpolateText(text: string, ctx: ExprContext): string {
  return toText(interpolate(text, ctx));
}

/** The expression of an `if:` (with or without `${{ }}`), for the validator and the evaluator. */
function ifExpression(cond: string): string {
  const t = cond.trim();
  const parts = findExpressions(t);
  const whole = wholeExpression(t, parts);
  if (whole !== null) return whole;
  if (parts.length > 0) throw new ExpressionError("an 'if' must be one expression, not text around '${{ }}'", cond);
  return t;
}

/** Checks an `if:` condition's syntax; throws ExpressionError. */
export function checkCondition(cond: string): void {
  parseExpression(ifExpression(cond));
}

/**
 * Evaluates an `if:` condition: `${{ }}` is optional, and a condition that calls no status
 * function is `success() && (condition)`. An empty condition is `success()`.
 */
export function evaluateCondition(cond: string | undefined, ctx: ExprContext): boolean {
  const state = ctx.state ?? 'success';
  if (cond === undefined || cond.trim() === '') return state === 'success';
  const src = ifExpression(cond);
  const node = parseExpression(src);
  if (!usesStatus(node) && state !== 'success') return false;
  return truthy(evalNode(node, { ...ctx, state }, src));
}
