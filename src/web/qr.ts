import { lazyRequire } from '../lazy-require.ts';
import { type Html, escapeHtml, trusted } from './html.ts';

/** The part of the `qrcode` package used here (it ships no types). */
interface QrCode {
  toString(
    text: string,
    options: { type: 'svg'; errorCorrectionLevel?: 'L' | 'M' | 'Q' | 'H'; margin?: number },
  ): Promise<string>;
}

const qrcode = lazyRequire<QrCode>('qrcode');

/**
 * A QR code of `text` drawn on the server as an inline SVG (the page's CSP forbids inline scripts,
 * not inline SVG), labelled for screen readers. The SVG comes from the library, not from user
 * input: the text is encoded into modules, never copied into the markup.
 */
export async function qrSvg(text: string, label: string): Promise<Html> {
  const svg = await qrcode().toString(text, { type: 'svg', errorCorrectionLevel: 'M', margin: 2 });
  const labelled = svg.replace('<svg ', `<svg role="img" aria-label="${escapeHtml(label)}" width="200" height="200" `);
  return trusted(labelled);
}
