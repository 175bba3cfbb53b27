'use strict'

const { CounterWorker, DecodeError } = require('collector-cluster')

// name:value|type[|@rate]; names as statsd takes them.
const LINE = /^([A-Za-z0-9_.-]+):(-?\d+(?:\.\d+)?)\|(c|g|ms)(?:\|@(\d*\.?\d+))?$/

/**
 * One message (a datagram, or a TCP line) holds one or more metric lines.
 * Per minute it counts: `c` → `<name>` += value / rate; `g` and `ms` →
 * `<name>.sum` += value and `<name>.count` += 1 (the mean is sum / count).
 * Every bad line is counted in the worker's `badLines`; a message with no
 * good line is also refused (`dropped.badMetric` in the master).
 */
class MetricsWorker extends CounterWorker {
  constructor (options = {}) {
    super(options, { prefix: '' })
    this.badLines = 0
    this.lastBad = 0
  }

  // countsOf may run twice for a message (a redelivered batch is read ahead),
  // so it notes its bad lines and doWork, once per message, adds them up.
  doWork (message) {
    const done = super.doWork(message)
    this.badLines += this.lastBad
    return done
  }

  countsOf (message) {
    const counts = []
    let bad = 0
    for (const line of message.data.toString('utf8').split('\n')) {
      if (line.trim() === '') continue
      const m = LINE.exec(line.trim())
      if (!m) {
        bad++
        continue
      }
      const name = this.settings.prefix + m[1]
      const value = Number(m[2])
      if (m[3] === 'c') counts.push({ metric: name, n: value / (m[4] ? Number(m[4]) : 1) })
      else counts.push({ metric: `${name}.sum`, n: value }, { metric: `${name}.count`, n: 1 })
    }
    this.lastBad = bad
    if (counts.length === 0) throw new DecodeError('badMetric', `no metric line in ${JSON.stringify(message.data.toString('utf8').slice(0, 80))}`)
    return counts
  }

  stats () {
    return { ...super.stats(), badLines: this.badLines }
  }
}

module.exports = MetricsWorker
