'use strict'
// Decoder speed on one core (issue 12): the syslog parser and the RTCP
// decoder on corpora they generate (valid RFC 5424 with structured data,
// escapes, BOM and non-ASCII text; RFC 3164; valid RTCP compound packets of
// several kinds; malformed mixes), each beside the previous implementation
// frozen under benchmarks/baseline/, alternating in the same run.
// Usage: node benchmarks/decoders.js [--seconds 6]   (per decoder and corpus)
// Prints a table, one verdict line per decoder, then one JSON line.
const minimist = require('minimist')
const syslog = require('./syslog-decoder-bench')
const rtcp = require('./rtcp-decoder-bench')
const hep = require('./hep-decoder-bench')
const { decoderTable } = require('./decoder-table')

async function main () {
  const { seconds } = minimist(process.argv.slice(2), { default: { seconds: 6 } })
  const results = [
    { decoder: 'syslog', rows: await syslog.run({ seconds }) },
    // the RTCP bench's seconds are its whole run, over its five corpora
    { decoder: 'rtcp', rows: await rtcp.run({ seconds: seconds * 5 }) },
    { decoder: 'hep', baseline: 'hep-js', target: 5, rows: await hep.run({ seconds: seconds * 2 }) }
  ]
  console.log(decoderTable(results))
  console.log(JSON.stringify({ bench: 'decoders', seconds, results }))
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
