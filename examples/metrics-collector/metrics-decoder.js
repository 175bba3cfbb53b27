'use strict'

const { DecodeError } = require('collector-cluster')

// name:value|type[|@rate]; names as statsd takes them.
const LINE = /^([A-Za-z0-9_.-]+):(-?\d+(?:\.\d+)?)\|(c|g|ms)(?:\|@(\d*\.?\d+))?$/

/**
 * One metric line as `{ name, type, value, rate }`; anything else is
 * refused with reason `badMetric` (counted in the master's dropped.badMetric).
 * Pure: the same line gives the same metric, however often it is decoded.
 */
function decodeMetric (line) {
  const m = LINE.exec(line.trim())
  if (!m) throw new DecodeError('badMetric', `not a metric line: ${JSON.stringify(line.slice(0, 80))}`)
  return { name: m[1], value: Number(m[2]), type: m[3], rate: m[4] ? Number(m[4]) : 1 }
}

/** The metric name of a line, read in the master for affinity. */
function metricName (data) {
  const colon = data.indexOf(0x3a)
  return data.latin1Slice(0, colon < 0 ? data.length : colon)
}

module.exports = { decodeMetric, metricName }
