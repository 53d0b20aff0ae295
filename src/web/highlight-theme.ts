/**
 * The highlighted-code colours of the file view (README "Web interface"), light and dark (the
 * dark one follows the system, as the pages do). Every token colour reads at 4.5:1 or more on its
 * theme's code background (WCAG AA; test/web-defects.test.ts computes each ratio).
 */
export interface CodeTheme {
  background: string;
  /** selector list → colour */
  tokens: Record<string, string>;
  /** diff tokens: colour on their own background */
  marks: Record<string, { color: string; background: string }>;
}

const SELECTORS = {
  base: '.hljs,.hljs-subst,.hljs-emphasis,.hljs-strong',
  keyword:
    '.hljs-doctag,.hljs-keyword,.hljs-meta .hljs-keyword,.hljs-template-tag,.hljs-template-variable,.hljs-type,.hljs-variable.language_',
  title: '.hljs-title,.hljs-title.class_,.hljs-title.class_.inherited__,.hljs-title.function_',
  constant:
    '.hljs-attr,.hljs-attribute,.hljs-literal,.hljs-meta,.hljs-number,.hljs-operator,.hljs-selector-attr,.hljs-selector-class,.hljs-selector-id,.hljs-variable,.hljs-section',
  string: '.hljs-meta .hljs-string,.hljs-regexp,.hljs-string',
  builtIn: '.hljs-built_in,.hljs-symbol',
  comment: '.hljs-code,.hljs-comment,.hljs-formula',
  name: '.hljs-name,.hljs-quote,.hljs-selector-pseudo,.hljs-selector-tag',
  bullet: '.hljs-bullet',
} as const;

export const LIGHT_CODE: CodeTheme = {
  background: '#ffffff',
  tokens: {
    [SELECTORS.base]: '#1f2328',
    [SELECTORS.keyword]: '#cf222e',
    [SELECTORS.title]: '#8250df',
    [SELECTORS.constant]: '#0550ae',
    [SELECTORS.string]: '#0a3069',
    [SELECTORS.builtIn]: '#953800',
    [SELECTORS.comment]: '#57606a',
    [SELECTORS.name]: '#116329',
    [SELECTORS.bullet]: '#6c5600',
  },
  marks: {
    '.hljs-addition': { color: '#116329', background: '#dafbe1' },
    '.hljs-deletion': { color: '#82071e', background: '#ffebe9' },
  },
};

export const DARK_CODE: CodeTheme = {
  background: '#0d1117',
  tokens: {
    [SELECTORS.base]: '#e6edf3',
    [SELECTORS.keyword]: '#ff7b72',
    [SELECTORS.title]: '#d2a8ff',
    [SELECTORS.constant]: '#79c0ff',
    [SELECTORS.string]: '#a5d6ff',
    [SELECTORS.builtIn]: '#ffa657',
    [SELECTORS.comment]: '#9198a1',
    [SELECTORS.name]: '#7ee787',
    [SELECTORS.bullet]: '#f2cc60',
  },
  marks: {
    '.hljs-addition': { color: '#aff5b4', background: '#033a16' },
    '.hljs-deletion': { color: '#ffdcd7', background: '#67060c' },
  },
};

const rules = (t: CodeTheme): string =>
  [
    ...Object.entries(t.tokens).map(([sel, color]) => `${sel}{color:${color}}`),
    ...Object.entries(t.marks).map(([sel, m]) => `${sel}{color:${m.color};background-color:${m.background}}`),
    `.hljs{background:${t.background}}`,
  ].join('\n');

export const HIGHLIGHT_CSS = `pre code.hljs{display:block;overflow-x:auto;padding:1em}code.hljs{padding:3px 5px}
.hljs-section,.hljs-strong{font-weight:700}.hljs-emphasis{font-style:italic}
${rules(LIGHT_CODE)}
@media (prefers-color-scheme:dark){
${rules(DARK_CODE)}
}
`;

/** WCAG 2 contrast ratio of two #rrggbb colours. */
export function contrastRatio(a: string, b: string): number {
  const lum = (hex: string) => {
    const [r, g, bl] = [1, 3, 5].map((i) => {
      const c = Number.parseInt(hex.slice(i, i + 2), 16) / 255;
      return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
    }) as [number, number, number];
    return 0.2126 * r + 0.7152 * g + 0.0722 * bl;
  };
  const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p) as [number, number];
  return (x + 0.05) / (y + 0.05);
}
