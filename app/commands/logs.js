'use strict'

const fs = require('node:fs')
const launcher = require('../launcher')
const { lineFormatter } = require('../pretty-log')
const { printable, printableJson } = require('../terminal-text')
const { commandConfig, takePositionals, launcherOptions } = require('./common')

const USAGE = 'collector logs <name> [--lines N] [--follow] [--json]'
const Config = commandConfig(USAGE, {
  lines: { alias: 'n', type: 'integer', min: 0, default: 50, description: 'how many of the last lines of each log to show' },
  follow: { alias: 'f', type: 'boolean', default: false, description: 'keep printing lines as they are written (Ctrl-C or q to stop)' },
  json: { type: 'boolean', default: false, description: 'print the JSON records, not pretty-printed (C1, bidi and invisible characters as \\u escapes: the same records)' }
})

const POLL_MS = 250

/** `collector logs <name>`: the collector's PM2 log files (stdout, then stderr), pretty-printed. */
async function run (argv) {
  if (argv.includes('--help') || argv.includes('-h')) return Config.printHelp()
  const { values: [name], rest } = takePositionals(argv, ['name'], USAGE)
  const config = Config.parse(rest)
  const proc = await launcher.describe(name, launcherOptions())
  const format = config.json ? jsonLine : lineFormatter({ colorize: Boolean(process.stdout.isTTY) })
  const files = [proc.logs.out, proc.logs.err].filter((file, i, all) => file && all.indexOf(file) === i)
  const offsets = files.map((file) => printTail(file, config.lines, format))
  if (!config.follow) return 0
  return follow(files, offsets, format)
}

// A record as JSON of the same value (printableJson); a line that is no
// record (a crash's text) through printable().
function jsonLine (line) {
  try {
    return printableJson(JSON.parse(line))
  } catch {
    return printable(line)
  }
}

// The last `count` lines of a file; returns its size (where following starts).
function printTail (file, count, format) {
  let text
  try {
    text = fs.readFileSync(file, 'utf8')
  } catch {
    return 0
  }
  const lines = text.split('\n')
  if (lines[lines.length - 1] === '') lines.pop()
  for (const line of count === 0 ? [] : lines.slice(-count)) process.stdout.write(format(line) + '\n')
  return Buffer.byteLength(text)
}

function follow (files, offsets, format) {
  const partial = files.map(() => '')
  const timer = setInterval(() => {
    files.forEach((file, i) => {
      let size
      try {
        size = fs.statSync(file).size
      } catch {
        return
      }
      if (size < offsets[i]) offsets[i] = 0 // rotated or flushed
      if (size === offsets[i]) return
      const fd = fs.openSync(file, 'r')
      const chunk = Buffer.alloc(size - offsets[i])
      fs.readSync(fd, chunk, 0, chunk.length, offsets[i])
      fs.closeSync(fd)
      offsets[i] = size
      const lines = (partial[i] + chunk.toString('utf8')).split('\n')
      partial[i] = lines.pop()
      for (const line of lines) process.stdout.write(format(line) + '\n')
    })
  }, POLL_MS)
  return new Promise((resolve) => {
    const stop = () => { clearInterval(timer); resolve(0) }
    process.once('SIGINT', stop)
    process.once('SIGTERM', stop)
  })
}

module.exports = { run, USAGE }
