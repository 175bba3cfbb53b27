'use strict'

// NetFlow/IPFIX decoding on one core: collectors/netflow/netflow-decoder.js
// on the datagrams softflowd exports from a pcap of 400 TCP/UDP flows (v5,
// v9, IPFIX with sysUpTime times, IPFIX with absolute milliseconds), or on
// synthesized datagrams of the same layout when softflowd is not installed.
// Rounds alternate between corpora in one run; v5's fixed layout is the
// in-run reference (the ratio: what reading by template costs per record).
// A malformed corpus (the same datagrams cut, or with a bad set length)
// shows refusals cost less than acceptance.
//
//   node benchmarks/netflow-decoder.js [--seconds 8]

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { decodeNetflow, createMemoryTemplateStore } = require('../collectors/netflow/netflow-decoder')
const DecodeError = require('../exceptions/decode-error')
const { makeFlows, writeFlowPcap } = require('../test/helpers/netflow-pcap')
const { missingPeers, softflowdExport } = require('../test/helpers/netflow-peers')
const { uint, ipv4, v5Packet, v9Packet, ipfixMessage, set, templateSet } = require('../test/helpers/netflow-packets')

const ROUNDS = 4
const RUNS = { v5: ['-v', '5', '-a'], v9: ['-v', '9', '-a'], 'ipfix-uptime': ['-v', '10', '-a'], 'ipfix-ms': ['-v', '10', '-A', 'milli'] }

async function softflowdCorpora () {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'netflow-bench-'))
  try {
    const pcap = path.join(dir, 'flows.pcap')
    await writeFlowPcap(pcap, makeFlows({ count: 400, start: Date.now() - 600000 }))
    const corpora = {}
    for (const [name, args] of Object.entries(RUNS)) corpora[name] = (await softflowdExport(pcap, args)).datagrams
    return corpora
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

// softflowd's layout, 24 flows a datagram (its v9/IPFIX datagrams hold 20–30).
function synthesizedCorpora () {
  const fields = [[8, 4], [12, 4], [22, 4], [21, 4], [1, 4], [2, 4], [10, 4], [14, 4], [61, 1], [136, 1], [7, 2], [11, 2], [4, 1], [6, 1], [60, 1], [5, 1]]
  const record = (i) => Buffer.concat([ipv4(`10.0.${i >> 8 & 255}.${i & 255}`), ipv4('192.0.2.1'), uint(1000 + i, 4), uint(5000 + i, 4), uint(1500 * i, 4), uint(i, 4), uint(1, 4), uint(2, 4),
    uint(0, 1), uint(1, 1), uint(1024 + i, 2), uint(443, 2), uint(6, 1), uint(0x1b, 1), uint(4, 1), uint(0, 1)])
  const data = (n) => set(1024, Buffer.concat(Array.from({ length: 24 }, (_, i) => record(n * 24 + i))))
  const times = [[152, 8], [153, 8]]
  const msRecord = (i) => Buffer.concat([record(i).subarray(0, 8), uint(1795600000000 + i, 8), uint(1795600005000 + i, 8), record(i).subarray(16)])
  return {
    v5: Array.from({ length: 16 }, (_, n) => v5Packet({ sysUptime: 100000, secs: 1795600000, records: Array.from({ length: 30 }, (_, i) => ({ srcPort: n * 30 + i, first: 1000, last: 5000, bytes: 1500 * i, packets: i })) })),
    v9: Array.from({ length: 16 }, (_, n) => v9Packet({ sysUptime: 100000, secs: 1795600000, sequence: n, sets: [...(n === 0 ? [templateSet(0, [{ id: 1024, fields }])] : []), data(n)] })),
    'ipfix-uptime': Array.from({ length: 16 }, (_, n) => ipfixMessage({
      exportTime: 1795600000, sequence: n * 24, sets: [...(n === 0 ? [templateSet(2, [{ id: 1024, fields }]), templateSet(3, [{ id: 256, scope: 1, fields: [[144, 4], [160, 8]] }]), set(256, Buffer.concat([uint(1, 4), uint(1795500000000, 8)]))] : []), data(n)]
    })),
    'ipfix-ms': Array.from({ length: 16 }, (_, n) => ipfixMessage({
      exportTime: 1795600000, sequence: n * 24, sets: [...(n === 0 ? [templateSet(2, [{ id: 1025, fields: [...fields.slice(0, 2), ...times, ...fields.slice(4)] }])] : []),
        set(1025, Buffer.concat(Array.from({ length: 24 }, (_, i) => msRecord(n * 24 + i))))]
    }))
  }
}

// The same datagrams refused the costly way (cut inside their last set, so
// everything before it is read first) and the cheap way (a v5 count of 31,
// a header cut short). Only datagrams that are in fact refused are kept.
function malformed (corpora) {
  const templates = createMemoryTemplateStore()
  const all = Object.values(corpora).flat()
  for (const buf of all) decodeNetflow(buf, { templates })
  return all.map((buf, i) => {
    if (i % 3 === 0) return buf.subarray(0, 10)
    if (buf.readUInt16BE(0) === 5 && i % 3 === 1) return Buffer.concat([buf.subarray(0, 2), Buffer.from([0, 31]), buf.subarray(4)])
    return buf.subarray(0, buf.length - 7)
  }).filter((buf) => decodeNetflow(buf, { templates }) instanceof DecodeError)
}

let sink = 0

function runFor (corpus, templates, until) {
  let records = 0
  let datagrams = 0
  while (performance.now() < until) {
    for (let i = 0; i < corpus.length; i++) {
      const got = decodeNetflow(corpus[i], { templates })
      if (got instanceof DecodeError) sink++
      else records += got.records.length
    }
    datagrams += corpus.length
  }
  return { records, datagrams }
}

/** Rows per corpus: datagrams and records decoded (or refused) per second, µs per record, and the rate against v5's. */
async function run ({ seconds = 8 } = {}) {
  const source = missingPeers().includes('softflowd') ? 'synthesized' : 'softflowd'
  const corpora = source === 'softflowd' ? await softflowdCorpora() : synthesizedCorpora()
  corpora.malformed = malformed(corpora)
  const stores = Object.fromEntries(Object.keys(corpora).map((name) => [name, createMemoryTemplateStore()]))
  for (const buf of Object.values(corpora).flat()) decodeNetflow(buf, { templates: stores.malformed }) // the malformed corpus's templates
  const totals = Object.fromEntries(Object.keys(corpora).map((name) => [name, { records: 0, datagrams: 0, ms: 0 }]))
  for (const [name, corpus] of Object.entries(corpora)) runFor(corpus, stores[name], performance.now() + 100) // learn templates, warm up
  const slice = (seconds * 1000) / (ROUNDS * Object.keys(corpora).length)
  for (let round = 0; round < ROUNDS; round++) {
    const names = round % 2 ? Object.keys(corpora).reverse() : Object.keys(corpora)
    for (const name of names) {
      const start = performance.now()
      const { records, datagrams } = runFor(corpora[name], stores[name], start + slice)
      totals[name].records += records
      totals[name].datagrams += datagrams
      totals[name].ms += performance.now() - start
    }
  }
  const v5PerSec = totals.v5.records / totals.v5.ms * 1000
  const rows = Object.entries(totals).map(([corpus, t]) => ({
    corpus,
    source,
    datagramsPerSec: Math.round(t.datagrams / t.ms * 1000),
    recordsPerDatagram: Math.round(t.records / t.datagrams * 10) / 10,
    recordsPerSec: Math.round(t.records / t.ms * 1000),
    usPerRecord: t.records ? Math.round(t.ms * 1000 / t.records * 1000) / 1000 : null,
    vsV5: t.records ? Math.round(t.records / t.ms * 1000 / v5PerSec * 100) / 100 : null
  }))
  if (sink === 0.5) console.log(sink)
  return rows
}

function table (rows) {
  const fmt = (n) => n === null ? '–' : n.toLocaleString('en-US')
  const head = ['corpus', 'datagrams/s', 'records/datagram', 'records/s', 'µs/record', 'vs v5']
  const lines = rows.map((r) => [r.corpus, fmt(r.datagramsPerSec), String(r.recordsPerDatagram), fmt(r.recordsPerSec), fmt(r.usPerRecord), r.vsV5 === null ? '–' : `${r.vsV5.toFixed(2)}x`])
  const widths = head.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)))
  return [head, ...lines].map((cells) => cells.map((c, i) => (i ? c.padStart(widths[i]) : c.padEnd(widths[i]))).join('  ')).join('\n')
}

module.exports = { run }

if (require.main === module) {
  const at = process.argv.indexOf('--seconds')
  const seconds = at > 0 ? Number(process.argv[at + 1]) : 8
  run({ seconds }).then((rows) => {
    console.log(`NetFlow/IPFIX decoder, one core, ${rows[0].source} datagrams`)
    console.log(table(rows))
    console.log(JSON.stringify({ bench: 'netflow-decoder', rows }))
  })
}
