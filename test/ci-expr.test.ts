import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  checkCondition,
  evaluate,
  evaluateCondition,
  type ExprContext,
  ExpressionError,
  interpolate,
  interpolateText,
  looseEquals,
  toNumber,
  toText,
  truthy,
} from '../src/ci/workflow/expr.ts';

const ctx: ExprContext = {
  contexts: {
    weft: { event_name: 'push', ref: 'refs/heads/main', ref_name: 'main', sha: 'abc', run_number: 7, event: { forced: false } },
    github: { event_name: 'push', ref_name: 'main' },
    env: { GREETING: 'Hello', EMPTY: '' },
    matrix: { os: 'linux', n: 2, flag: true },
    needs: { build: { result: 'success', outputs: { v: '1.2' } }, lint: { result: 'failure', outputs: {} } },
    steps: { a: { outputs: { x: 'one' }, outcome: 'success' } },
    list: [
      { name: 'a', n: 1 },
      { name: 'b', n: 2 },
    ],
    inputs: { tag: 'v1', 'dry-run': true },
  },
};
const ev = (e: string, c: ExprContext = ctx) => evaluate(e, c);
const refuses = (e: string, message: RegExp, c: ExprContext = ctx) =>
  assert.throws(
    () => ev(e, c),
    (err: unknown) => err instanceof ExpressionError && message.test(err.message),
    `${e} should fail with ${message}`,
  );

describe('CI expressions: literals and contexts', () => {
  it('literals', () => {
    assert.equal(ev('null'), null);
    assert.equal(ev('true'), true);
    assert.equal(ev('false'), false);
    assert.equal(ev('42'), 42);
    assert.equal(ev('-3.5'), -3.5);
    assert.equal(ev('0xff'), 255);
    assert.equal(ev('1e3'), 1000);
    assert.equal(ev("'it''s'"), "it's");
    assert.equal(ev("''"), '');
  });
  it('property access: dots, brackets, case-insensitive names, missing is null, star filter', () => {
    assert.equal(ev('weft.ref_name'), 'main');
    assert.equal(ev('github.event_name'), 'push');
    assert.equal(ev("weft['sha']"), 'abc');
    assert.equal(ev('WEFT.REF_NAME'), 'main');
    assert.equal(ev('weft.event.forced'), false);
    assert.equal(ev('weft.nothing'), null);
    assert.equal(ev('weft.nothing.deeper'), null);
    assert.equal(ev('needs.build.outputs.v'), '1.2');
    assert.equal(ev('inputs.dry-run'), true);
    assert.equal(ev('list[1].name'), 'b');
    assert.equal(ev('list[5]'), null);
    assert.deepEqual(ev('list.*.name'), ['a', 'b']);
    assert.deepEqual(ev('needs.*.result'), ['success', 'failure']);
    assert.equal(ev('steps.a.outputs.x'), 'one');
  });
  it('unknown context is an error', () => refuses('nope.x', /unknown context 'nope'/));
});

describe('CI expressions: operators', () => {
  it('! negates truthiness', () => {
    assert.equal(ev('!true'), false);
    assert.equal(ev("!''"), true);
    assert.equal(ev('!0'), true);
    assert.equal(ev('!!weft.sha'), true);
    assert.equal(ev('!null'), true);
  });
  it('== and != : case-insensitive strings, coercion to numbers across types', () => {
    assert.equal(ev("'ABC' == 'abc'"), true);
    assert.equal(ev("'1' == 1"), true);
    assert.equal(ev('true == 1'), true);
    assert.equal(ev('null == 0'), true);
    assert.equal(ev("null == ''"), true);
    assert.equal(ev("'x' == 0"), false);
    assert.equal(ev("'a' != 'b'"), true);
    assert.equal(ev('matrix.n != 2'), false);
    assert.equal(ev('list == list'), true);
    assert.equal(ev("list == 'Array'"), false);
  });
  it('<, <=, >, >= : numbers and strings', () => {
    assert.equal(ev('1 < 2'), true);
    assert.equal(ev('2 <= 2'), true);
    assert.equal(ev('3 > 2'), true);
    assert.equal(ev('2 >= 3'), false);
    assert.equal(ev("'b' > 'A'"), true);
    assert.equal(ev("'10' > 9"), true);
    assert.equal(ev("'x' < 1"), false);
  });
  it('&& and || return an operand; precedence and parentheses', () => {
    assert.equal(ev("'' || 'default'"), 'default');
    assert.equal(ev("'a' && 'b'"), 'b');
    assert.equal(ev("0 && 'b'"), 0);
    assert.equal(ev('true || false && false'), true);
    assert.equal(ev('(true || false) && false'), false);
    assert.equal(ev('!(1 == 2) && 1 < 2'), true);
    assert.equal(ev("matrix.os == 'linux' && matrix.n > 1"), true);
  });
});

describe('CI expressions: functions', () => {
  it('contains: arrays by equality, strings case-insensitively', () => {
    assert.equal(ev("contains('Hello world', 'WORLD')"), true);
    assert.equal(ev("contains(fromJSON('[1,2]'), 2)"), true);
    assert.equal(ev("contains(fromJSON('[\"a\"]'), 'b')"), false);
    assert.equal(ev("contains(needs.*.result, 'failure')"), true);
  });
  it('startsWith, endsWith', () => {
    assert.equal(ev("startsWith(weft.ref, 'refs/HEADS/')"), true);
    assert.equal(ev("startsWith('abc', 'b')"), false);
    assert.equal(ev("endsWith('release.tar.gz', '.GZ')"), true);
    assert.equal(ev("endsWith('abc', 'b')"), false);
  });
  it('format: placeholders, escaped braces, errors', () => {
    assert.equal(ev("format('{0} {1}!', env.GREETING, 'you')"), 'Hello you!');
    assert.equal(ev("format('{{{0}}}', 3)"), '{3}');
    refuses("format('{1}', 'a')", /'\{1\}' has no argument \(1 given\)/);
    refuses("format('{x}')", /invalid placeholder at position 1/);
    refuses("format('a}b')", /a lone '\}' at position 2/);
  });
  it('join: arrays with a separator (default comma), other values as text', () => {
    assert.equal(ev('join(fromJSON(\'[1,"b",true]\'))'), '1,b,true');
    assert.equal(ev("join(list.*.name, ' + ')"), 'a + b');
    assert.equal(ev("join('x', '-')"), 'x');
  });
  it('toJSON and fromJSON', () => {
    assert.equal(ev('toJSON(matrix)'), JSON.stringify({ os: 'linux', n: 2, flag: true }, null, 2));
    assert.deepEqual(ev('fromJSON(\'{"a":[1,null]}\')'), { a: [1, null] });
    assert.equal(ev("fromJSON('true')"), true);
    refuses("fromJSON('{nope')", /fromJSON\(\): not valid JSON: '\{nope'/);
  });
  it('function names are case-insensitive; unknown functions and wrong arity are refused', () => {
    assert.equal(ev("STARTSWITH('ab', 'a')"), true);
    refuses("hashFiles('**/x')", /unknown function 'hashFiles'/);
    refuses("contains('a')", /contains\(\) takes 2 arguments, got 1/);
    refuses('always(1)', /always\(\) takes 0 arguments, got 1/);
    refuses('join()', /join\(\) takes 1 or 2 arguments, got 0/);
    refuses('format()', /format\(\) takes at least 1 argument, got 0/);
    refuses('toJSON(1, 2)', /toJSON\(\) takes 1 argument, got 2/);
  });
  it('status functions: in conditions only', () => {
    refuses('success()', /success\(\) is only available in 'if'/);
    assert.equal(ev('always()'), true);
    const at = (state: 'success' | 'failure' | 'cancelled') => ({ ...ctx, state });
    assert.equal(ev('success()', at('success')), true);
    assert.equal(ev('failure()', at('failure')), true);
    assert.equal(ev('success()', at('failure')), false);
    assert.equal(ev('cancelled()', at('cancelled')), true);
    assert.equal(ev('failure()', at('cancelled')), false);
  });
});

describe('CI expressions: syntax errors', () => {
  it('each message', () => {
    refuses('', /empty expression/);
    refuses("'abc", /unterminated string at position 1/);
    refuses('a # b', /unexpected character '#' at position 3/);
    refuses('1 2', /unexpected token, found '2' at position 3/);
    refuses('(1', /expected '\)', found the end/);
    refuses('weft.', /expected a property name after '\.'/);
    refuses('==', /expected a value, found '==' at position 1/);
    refuses('list[0', /expected '\]'/);
    refuses(`${'('.repeat(60)}1${')'.repeat(60)}`, /nested too deeply/);
    refuses(`${'!'.repeat(60)}1`, /nested too deeply/);
  });
});

describe('CI expressions: templates and conditions', () => {
  it('interpolate: text around expressions, a lone expression keeps its type', () => {
    assert.equal(interpolate('v${{ needs.build.outputs.v }}-${{ matrix.os }}', ctx), 'v1.2-linux');
    assert.equal(interpolate('${{ matrix.n }}', ctx), 2);
    assert.equal(interpolateText('${{ matrix.n }}', ctx), '2');
    assert.equal(interpolate("${{ '}}' }}", ctx), '}}');
    assert.equal(interpolate('no expressions', ctx), 'no expressions');
    assert.throws(() => interpolate('${{ 1 ', ctx), /without a closing/);
  });
  it('conditions: ${{ }} optional, implicit success(), status functions', () => {
    assert.equal(evaluateCondition(undefined, ctx), true);
    assert.equal(evaluateCondition(undefined, { ...ctx, state: 'failure' }), false);
    assert.equal(evaluateCondition("matrix.os == 'linux'", ctx), true);
    assert.equal(evaluateCondition("${{ matrix.os == 'mac' }}", ctx), false);
    assert.equal(evaluateCondition('true', { ...ctx, state: 'failure' }), false);
    assert.equal(evaluateCondition('failure()', { ...ctx, state: 'failure' }), true);
    assert.equal(evaluateCondition('always()', { ...ctx, state: 'cancelled' }), true);
    assert.equal(evaluateCondition("always() && matrix.os == 'mac'", { ...ctx, state: 'cancelled' }), false);
    assert.equal(evaluateCondition('!cancelled()', { ...ctx, state: 'failure' }), true);
    assert.throws(() => checkCondition('x ${{ y }}'), /one expression, not text around/);
    assert.throws(() => checkCondition('a =='), /expected a value/);
  });
  it('value conversions', () => {
    assert.equal(truthy(NaN), false);
    assert.equal(truthy('0'), true);
    assert.equal(truthy([]), true);
    assert.equal(toNumber(' 12 '), 12);
    assert.equal(toNumber('0x10'), 16);
    assert.ok(Number.isNaN(toNumber('12a')));
    assert.ok(Number.isNaN(toNumber({})));
    assert.equal(toText(null), '');
    assert.equal(toText(-0), '0');
    assert.equal(toText([1]), 'Array');
    assert.equal(toText({}), 'Object');
    assert.equal(looseEquals(NaN, NaN), false);
  });
});
