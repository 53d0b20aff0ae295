/** A count with its noun, singular for one (`1 file changed`, `2 files changed`, `1 byte`). */
export function count(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}
