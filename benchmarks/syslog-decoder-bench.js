'use strict'

// Syslog parser throughput on one core: today's parser against the frozen
// copy of the one before it (benchmarks/baseline/syslog-parser.js), on the
// same generated corpora in the same run, alternating rounds; the best
// round of each counts. Prints a table and a JSON line.
//   node benchmarks/syslog-decoder-bench.js [--seconds 6]

const { parseSyslog } = require('../collectors/syslog/parser')
const baseline = require('./baseline/syslog-parser')

const ROUNDS = 4
const CORPUS_SIZE = 2000

function rng (seed) {
  let s = seed
  return (n) => {
    s = (s * 1103515245 + 12345) & 0x7fffffff
    return s % n
  }
}

const WORDS = ['user', 'login', 'failed', 'für', 'connexion', 'établie', 'запрос', '処理', 'ok', 'GET', '/index.html', 'status=200', 'latency']

function text (rand, words) {
  return Array.from({ length: words }, () => WORDS[rand(WORDS.length)]).join(' ')
}

function stamp (rand) {
  const frac = ['', '.003', '.000003', '.123456'][rand(4)]
  const offset = ['Z', '+02:00', '-07:00'][rand(3)]
  return `2026-0${1 + rand(9)}-1${rand(10)}T1${rand(10)}:${10 + rand(50)}:${10 + rand(50)}${frac}${offset}`
}

function rfc5424 (rand, withSd) {
  const sd = withSd
    ? `[exampleSDID@32473 iut="${rand(9)}" eventSource="App\\"lication" eventID="${rand(9999)}"][meta@1 path="C:\\\\x\\]" ip="10.0.0.${rand(255)}" ip="10.0.1.${rand(255)}"]`
    : '-'
  const bom = rand(2) ? '\uFEFF' : ''
  return `<${rand(192)}>1 ${stamp(rand)} host${rand(50)}.example.com app${rand(9)} ${rand(99999)} ID${rand(99)} ${sd} ${bom}${text(rand, 4 + rand(12))}`
}

function rfc3164 (rand) {
  const month = ['Jan', 'Feb', 'Mar', 'Jun', 'Oct', 'Dec'][rand(6)]
  const day = String(1 + rand(28)).padStart(2, ' ')
  return `<${rand(192)}>${month} ${day} 1${rand(10)}:${10 + rand(50)}:${10 + rand(50)} host${rand(50)} app${rand(9)}[${rand(99999)}]: ${text(rand, 4 + rand(12))}`
}

const BROKEN = [
  (m) => m.replace(' app', ' a\tpp'), (m) => m.replace('<', '<0'), (m) => m.replace('"]', ']"]'),
  (m) => m.replace('1 2026', '1x 2026'), (m) => m.slice(0, 40), (m) => m.replace('T1', 't1'),
  (m) => m.replace('[meta@1', '[exampleSDID@32473'), (m) => 'no pri ' + m, (m) => m.replace('ID', 'ÏD')
]

/** The corpora, each an array of Buffers as a worker receives them. */
function corpora () {
  const rand = rng(42)
  const make = (fn) => Array.from({ length: CORPUS_SIZE }, () => Buffer.from(fn()))
  return {
    '5424 + SD, escapes, BOM, UTF-8': make(() => rfc5424(rand, true)),
    '5424 no SD': make(() => rfc5424(rand, false)),
    3164: make(() => rfc3164(rand)),
    'malformed mix': make(() => BROKEN[rand(BROKEN.length)](rfc5424(rand, true)))
  }
}

function rate (parse, corpus, seconds) {
  const receivedAt = new Date(2026, 5, 15)
  const options = { receivedAt }
  let count = 0
  const start = process.hrtime.bigint()
  const deadline = start + BigInt(Math.round(seconds * 1e9))
  let now = start
  while (now < deadline) {
    for (let i = 0; i < corpus.length; i++) parse(corpus[i], options)
    count += corpus.length
    now = process.hrtime.bigint()
  }
  decoded += count
  return count / (Number(now - start) / 1e9)
}

let decoded = 0 // messages parsed in the measured rounds, both parsers (the table's `messages`)

/**
 * Runs every corpus through both parsers, alternating ROUNDS rounds; the
 * rate is each parser's best round.
 * @param {{ seconds?: number }} [options] total time per corpus and parser, split over the rounds
 * @returns {Promise<Array<{ corpus: string, messages: number, baselinePerSec: number, newPerSec: number, ratio: number }>>}
 */
async function run ({ seconds = 6 } = {}) {
  const results = []
  for (const [name, corpus] of Object.entries(corpora())) {
    let best = { baseline: 0, next: 0 }
    rate(baseline.parseSyslog, corpus, 0.2) // warm-up
    rate(parseSyslog, corpus, 0.2)
    decoded = 0
    for (let round = 0; round < ROUNDS; round++) {
      best = { baseline: Math.max(best.baseline, rate(baseline.parseSyslog, corpus, seconds / ROUNDS)), next: Math.max(best.next, rate(parseSyslog, corpus, seconds / ROUNDS)) }
      await new Promise(setImmediate)
    }
    results.push({ corpus: name, messages: decoded, baselinePerSec: Math.round(best.baseline), newPerSec: Math.round(best.next), ratio: Number((best.next / best.baseline).toFixed(2)) })
  }
  return results
}

if (require.main === module) {
  const flag = process.argv.indexOf('--seconds')
  const seconds = flag === -1 ? 6 : Number(process.argv[flag + 1])
  run({ seconds }).then((results) => {
    console.log(require('./decoder-table').decoderTable([{ decoder: 'syslog', rows: results }]))
    console.log(JSON.stringify({ bench: 'syslog-decoder', results }))
  })
}

module.exports = { run, corpora }
