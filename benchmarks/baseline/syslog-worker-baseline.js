'use strict'

// The syslog collector's definition as it is today, except that each
// message is read by the frozen copy of the previous parser
// (benchmarks/baseline/syslog-parser.js): the baseline side of
// benchmarks/syslog-e2e.js. Everything after parsing (ids, batching,
// inserts, counters, acknowledgement) is the current code, so the two sides
// differ in the parser only. The old parser knows no --strict/--lenient; it
// gets `{ receivedAt }` as the old worker gave it.

const syslog = require('../../collectors/syslog')
const { defineCollector } = require('../../lib/collector/define-collector')
const { parseSyslog } = require('./syslog-parser')

module.exports = defineCollector({
  ...syslog.definition,
  file: __filename,
  decode: (message, settings, { receivedAt }) => parseSyslog(message.data, { receivedAt })
})
