'use strict'

const { defineCollector } = require('../../lib/collector/define-collector')
const sinks = require('../../lib/collector/sinks')
const { decodeStatsdBytes, statsdName } = require('./statsd-decoder')

// The metric-name prefix: empty, or name parts ending in '.'.
const PREFIX = /^([A-Za-z0-9_-]+\.)*$/
const MAX_PREFIX = 64 // a stored name is the prefix and a line's name of at most 255

/**
 * StatsD over UDP (port 8125): each line of a datagram is a metric,
 * distributed by its name, so one metric's lines coalesce on one worker.
 * Stored in `metrics`, one document per metric, type and UTC minute:
 * counters `count` (lines) and `sum` (value / rate); timers `count` (1 / rate
 * a line, as etsy statsd counts them), `samples` (lines: the mean is sum /
 * samples), `sum` (values), `min`, `max`; gauges `count`, `min`, `max` and `last` (the value of the
 * line that reached the collector last: `last.value`). Numbers are bounded
 * (statsd-decoder.js: `valueRange`), and so are the new names a minute.
 */
module.exports = defineCollector({
  name: 'statsd',
  description: 'StatsD metrics (name:value|c|ms|g[|@rate]) over UDP into per-minute documents in MongoDB',
  listen: { protocol: 'udp', port: 8125, split: 'lines', fixed: ['split'] }, // a datagram carries several metrics, a line each
  settings: {
    prefix: {
      type: 'string',
      default: '',
      group: 'StatsD',
      description: 'prepended to every metric name, e.g. "prod." (name parts ending in ".", at most 64 characters)',
      validate: (prefix) => !PREFIX.test(prefix) ? 'must be dot-separated name parts ending in "." (letters, digits, "_", "-")' : prefix.length > MAX_PREFIX ? `must be at most ${MAX_PREFIX} characters, a name's 255 come after it (this has ${prefix.length})` : undefined
    }
  },
  key: (data) => statsdName(data),
  decode: (message, settings) => {
    const metric = decodeStatsdBytes(message.data)
    metric.name = settings.prefix + metric.name
    return metric
  },
  // A metric of a new name (or type) is a document a minute more: capped by --max-new-keys-per-minute.
  cardinality: (metric) => `${metric.name}|${metric.type}`,
  tally: { types: (metric) => metric.type },
  sinks: [sinks.updates({
    collection: 'metrics',
    indexes: [{ key: { name: 1, minute: 1 } }],
    expireBy: 'minute', // each document's minute (of arrival), never moved
    expireSpan: 60000, // and written to for that minute: its age counts from the minute's end
    of: (metric, { receivedAt }) => {
      const minute = new Date(Math.floor(receivedAt.getTime() / 60000) * 60000)
      const update = { _id: `${metric.name}|${metric.type}|${minute.toISOString()}`, setOnInsert: { name: metric.name, type: metric.type, minute } }
      const { value } = metric
      if (metric.type === 'c') return { ...update, inc: { count: 1, sum: value / metric.rate } }
      const extremes = { min: { min: value }, max: { max: value } }
      if (metric.type === 'ms') return { ...update, ...extremes, inc: { count: 1 / metric.rate, samples: 1, sum: value } }
      return { ...update, ...extremes, inc: { count: 1 }, last: { last: value } }
    }
  })]
})
