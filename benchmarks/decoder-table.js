'use strict'
// The one table format of the decoder benchmarks (benchmarks/decoders.js,
// and each decoder's own bench run directly): rates of today's decoder
// beside the frozen previous one (benchmarks/baseline/), measured in the
// same run, and whether malformed input is refused at least as fast as the
// slowest valid corpus is accepted.

const fmt = (n) => n.toLocaleString('en-US')

/**
 * @param {Array<{ decoder: string, baseline?: string, target?: number, rows: Array<{ corpus: string, messages: number, baselinePerSec: number, newPerSec: number, ratio: number }> }>} results
 * @returns {string} the table and one verdict line per decoder
 */
function decoderTable (results) {
  const head = ['decoder', 'corpus', 'messages', 'previous/s', 'now/s', 'ratio']
  const lines = results.flatMap(({ decoder, rows }) => rows.map((r) => [decoder, r.corpus, fmt(r.messages), fmt(r.baselinePerSec), fmt(r.newPerSec), `${r.ratio.toFixed(2)}x`]))
  const widths = head.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)))
  const line = (cells) => cells.map((c, i) => (i < 2 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ')
  const out = [line(head), ...lines.map(line)]
  for (const { decoder, rows, baseline = 'the previous decoder', target = 2 } of results) {
    const valid = rows.filter((r) => !/malformed/.test(r.corpus))
    const malformed = rows.filter((r) => /malformed/.test(r.corpus))
    const slowest = Math.min(...valid.map((r) => r.newPerSec))
    const lowestRatio = Math.min(...valid.map((r) => r.ratio))
    out.push(`${decoder}: valid corpora ${lowestRatio.toFixed(2)}x ${baseline} at the least (target ${target}x); ` +
      malformed.map((r) => `${r.corpus} ${fmt(r.newPerSec)}/s vs slowest valid ${fmt(slowest)}/s`).join(', '))
  }
  return out.join('\n')
}

module.exports = { decoderTable }
