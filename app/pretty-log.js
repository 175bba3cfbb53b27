'use strict'

// Readable log lines for people (pino-pretty), for the collector's own
// terminal and for `collector logs`. One set of options, so both look alike.

const pinoPretty = require('pino-pretty')

const OPTIONS = Object.freeze({
  translateTime: 'SYS:yyyy-mm-dd HH:MM:ss.l',
  ignore: 'pid,hostname',
  singleLine: true
})

/**
 * A synchronous destination on `stdout` that prints records readably
 * (colours only where `stdout` is a terminal).
 * @param {{ fd?: number, isTTY?: boolean }} [stdout]
 */
function prettyStream (stdout = process.stdout) {
  return pinoPretty({ ...OPTIONS, colorize: Boolean(stdout.isTTY), destination: stdout.fd ?? 1, sync: true })
}

/**
 * A function turning one log line (JSON from a collector, or any other text)
 * into a readable line; text that is not a JSON record comes back as is.
 * @param {{ colorize?: boolean }} [options]
 * @returns {(line: string) => string}
 */
function lineFormatter ({ colorize = false } = {}) {
  const format = pinoPretty.prettyFactory({ ...OPTIONS, colorize })
  return (line) => {
    if (!line.startsWith('{')) return line
    try {
      return format(JSON.parse(line)).replace(/\n$/, '')
    } catch {
      return line
    }
  }
}

module.exports = { prettyStream, lineFormatter }
