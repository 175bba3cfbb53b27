'use strict'

// Readable log lines for people (pino-pretty), for the collector's own
// terminal and for `collector logs`: one formatter, so both look alike.
// pino-pretty prints a record's strings raw (a message's ESC or CR reaches
// the terminal as itself) and JSON-quotes the rest without escaping C1 or
// bidi characters; a record can carry what a sender chose, so every string
// goes through printable() (terminal-text.js) before pino-pretty sees it.

const pino = require('pino')
const pinoPretty = require('pino-pretty')
const { printable } = require('./terminal-text')

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
  const format = lineFormatter({ colorize: Boolean(stdout.isTTY) })
  const destination = pino.destination({ dest: stdout.fd ?? 1, sync: true })
  let open = true
  // A reader that went away (`| head`) ends the log, not the collector.
  destination.on('error', (error) => {
    if (error.code !== 'EPIPE') throw error
    open = false
  })
  return {
    write (chunk) {
      for (const line of chunk.split('\n')) if (line && open) destination.write(format(line) + '\n')
    }
  }
}

/**
 * A function turning one log line (JSON from a collector, or any other text)
 * into a readable line without control characters (but a stack's line
 * breaks); text that is not a JSON record comes back through printable().
 * @param {{ colorize?: boolean }} [options]
 * @returns {(line: string) => string}
 */
function lineFormatter ({ colorize = false } = {}) {
  const format = pinoPretty.prettyFactory({ ...OPTIONS, colorize })
  return (line) => {
    if (line.startsWith('{')) {
      try {
        return format(printableRecord(compactError(JSON.parse(line)))).replace(/\n$/, '')
      } catch {}
    }
    return printable(line)
  }
}

// An error whose message the line says already (`collector failed to
// start: <its message>`, `database unreachable (<its message>)`) shows as
// its type and code among the line's fields, not as a block under it
// repeating the message; one with a stack is kept whole.
function compactError (record) {
  const error = record.error
  const message = typeof error === 'string' ? error : error && error.message
  if (typeof message !== 'string' || typeof record.msg !== 'string' || !record.msg.includes(message) || (typeof error === 'object' && error.stack)) return record
  const { error: said, ...rest } = record
  return typeof said === 'string' ? rest : { ...rest, ...(said.type ? { errorType: said.type } : {}), ...(said.code ? { errorCode: said.code } : {}) }
}

// Every string and key of a record through printable(). A stack keeps its
// line breaks: pino-pretty prints it indented under its record, so a line
// of it cannot pass for a record of its own.
function printableRecord (value, key) {
  if (typeof value === 'string') return key === 'stack' ? value.split('\n').map(printable).join('\n') : printable(value)
  if (Array.isArray(value)) return value.map((item) => printableRecord(item))
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [printable(k), printableRecord(v, k)]))
  return value
}

module.exports = { prettyStream, lineFormatter }
