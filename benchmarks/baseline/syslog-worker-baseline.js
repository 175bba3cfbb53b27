'use strict'

// The syslog worker as it is today, except that each message is read by the
// frozen copy of the previous parser (benchmarks/baseline/syslog-parser.js):
// the baseline side of benchmarks/syslog-e2e.js. Everything after parsing
// (ids, batching, insertMany, counters, acknowledgement) is the current code,
// so the two sides differ in the parser only. The old parser knows no
// --strict/--lenient; it gets `{ receivedAt }` as the old worker gave it.

const SyslogWorker = require('../../collectors/syslog/syslog-worker')
const { parseSyslog } = require('./syslog-parser')

class BaselineSyslogWorker extends SyslogWorker {
  parse (data, receivedAt) {
    return parseSyslog(data, { receivedAt })
  }
}

module.exports = BaselineSyslogWorker
