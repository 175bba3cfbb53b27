'use strict'

// Helpers shared by the command files (not a command itself).

const ArgvConfig = require('../../configs/argv-config')
const CollectorError = require('../../exceptions/collector-error')
const { statsDir } = require('../stats-file')
const { printable, displayWidth, clipWidth } = require('../terminal-text')
const { formatBytes } = require('../../lib/shared/format-bytes')

/**
 * A config class for a command's own flags, on the same argv engine as the
 * collectors' configs: the same parsing, error messages (one
 * InvalidConfigError naming each bad flag) and help text.
 * @param {string} usage
 * @param {object} flags flag definitions
 * @returns {typeof ArgvConfig}
 */
function commandConfig (usage, flags, crossChecks = () => []) {
  return class extends ArgvConfig {
    static usage = usage
    static flags = ArgvConfig.extendFlags({ help: { alias: 'h', type: 'boolean', default: false, description: 'show this help' }, ...flags })

    // Checks across flags (`(config, given) => [{ flag, message }]`, given: the flags set), after each flag's own.
    validate (config, given) {
      return [...super.validate(config, given), ...crossChecks(config, given)]
    }

    /** Prints the usage text; returns exit code 0. */
    static printHelp () {
      process.stdout.write(new this([]).help())
      return 0
    }
  }
}

/** A user mistake on the command line: printed without a stack, exit 2. */
function usageError (message) {
  return new CollectorError(message, 'ERR_USAGE')
}

/**
 * Takes the leading positional arguments a command needs (`stop <name>`).
 * `--help` (or `-h`) where one is missing asks for the usage: printed on
 * stdout, exit 0 (ERR_HELP, bin/collector.js).
 * @param {string[]} argv
 * @param {string[]} names what each positional is, for the error message
 * @param {string} usage
 * @returns {{ values: string[], rest: string[] }}
 */
function takePositionals (argv, names, usage) {
  const values = []
  let i = 0
  for (; i < names.length; i++) {
    const token = argv[i]
    if (token === '--help' || token === '-h') throw new CollectorError(`usage: ${usage}${names[i] === 'collector' ? `\n<collector>: ${collectorChoices()}; \`collector run <collector> --help\` lists its flags` : ''}`, 'ERR_HELP')
    if (token === undefined || token.startsWith('-')) throw usageError(`missing <${names[i]}>\nusage: ${usage}`)
    values.push(token)
  }
  return { values, rest: argv.slice(i) }
}

// What <collector> may be (required late: the registry is not needed by most commands).
function collectorChoices () {
  return `one of ${Object.keys(require('../collector-registry').BUILT_INS).join(', ')}, or the path of a collector module`
}

/** Launcher options from the environment ($PM2_HOME). */
function launcherOptions (env = process.env) {
  return env.PM2_HOME ? { pm2Home: env.PM2_HOME } : {}
}

function defaultStatsDir (env = process.env) {
  return statsDir({ env })
}

// A cell's widest, but in the last column: a sender's 1,000-character
// Call-ID would widen its column in every row (--json keeps the whole
// value); a last one (a message's first line, a log line) widens nothing.
const MAX_CELL_WIDTH = 64

/**
 * Text table: columns `{ key, title, align? }` over row objects. A cell's
 * text may come from a sender (a CNAME, a Call-ID): it is printed through
 * printable(), cut to MAX_CELL_WIDTH columns (ending in …) but in the last
 * column, and the columns are as wide as the escaped text shows.
 * @returns {string}
 */
function formatTable (columns, rows) {
  const last = columns.length - 1
  const cells = rows.map((row) => columns.map((c, i) => i === last ? cellText(row[c.key]) : clipWidth(cellText(row[c.key]), MAX_CELL_WIDTH)))
  const widths = columns.map((c, i) => Math.max(displayWidth(c.title), ...cells.map((r) => displayWidth(r[i]))))
  const line = (values) => values.map((v, i) => {
    const pad = ' '.repeat(widths[i] - displayWidth(v))
    return columns[i].align === 'left' ? v + pad : pad + v
  }).join('  ').trimEnd()
  return [line(columns.map((c) => c.title)), ...cells.map(line)].join('\n') + '\n'
}

function cellText (value) {
  if (value === null || value === undefined) return '-'
  if (typeof value === 'number') return Number.isInteger(value) ? String(value) : value.toFixed(1)
  return printable(value)
}

/** 90061000 → "1d1h1m", 5300 → "5s". */
function formatUptime (ms) {
  if (!(ms > 0)) return '-'
  const s = Math.floor(ms / 1000)
  const parts = [[Math.floor(s / 86400), 'd'], [Math.floor(s / 3600) % 24, 'h'], [Math.floor(s / 60) % 60, 'm'], [s % 60, 's']]
  const shown = parts.filter(([n]) => n > 0).slice(0, 2).map(([n, u]) => `${n}${u}`).join('')
  return shown || '0s'
}

// A time as an operator types it for --from/--to or the view's search form:
// one without a zone is UTC, as every table and page prints its times
// (`2026-11-30 04:18:33`), not the host's zone (Date.parse's reading), so a
// time copied from them finds what it named on any host. A zone it names
// stands, as Date.parse reads it: an offset after the time (`+01:00`,
// `-0500`, `+530`), a name (`Z`, `UTC`, `GMT+0100`, `UTC +01:00`, `EST`),
// Date#toString's with its comment (`(Central European Standard Time)`).
// Without one the text is read with GMT after it (the table's form, `04:18
// PM`, `2026/11/30`, `Nov 30 2026`), or Z (ISO's `T` forms): UTC as written,
// the hour a host's clock skips in spring included. NaN if no time: one
// without a year of four digits (Date.parse reads `1` as 2001), or a day
// its month has not (`2026-02-30`, `Feb 30 2026`: read as March by Date.parse).
const OFFSET = /\d:\d\d(?::\d\d(?:\.\d+)?)?\s*(?:[AP]M\s*)?[+-]\d{1,4}(?::\d\d)?$/i
const NAMED = /(?:^|[\d\s])(?:Z|UT|UTC|GMT|[ECMP][SD]T)(?:\s*[+-]\d{1,4}(?::\d\d)?)?$/i
const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec']
// Dates as Date.parse reads them: year first (2026-11-30, 2026/11/30,
// 2026.11.30), month first (11/30/2026), a month's name before or after
// its day (Nov 30 2026, 30 Nov 2026; not the minutes of a time before it,
// `10:00 Nov 30 2026`).
const NUMERIC_DATE = /(?<![\d.])(\d{4})([-/.])(\d{1,2})\2(\d{1,2})(?!\d)/
const MONTH_FIRST = /(?<![\d.:])(\d{1,2})([-/.])(\d{1,2})\2(\d{4})(?!\d)/
const NAMED_DATE = /\b(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+(\d{1,2})\b|(?<![\d:.])(\d{1,2})\s+(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)/i
const YEAR = /(?:^|\D)(\d{4})(?!\d)|^[+-]\d{6}-/

// Whether the date the text writes is a day of the calendar (the month has that day).
function isCalendarDate (text) {
  const year = YEAR.exec(text)
  if (year === null) return false
  let date = NUMERIC_DATE.exec(text)
  if (date !== null) return isDay(+date[1], +date[3], +date[4])
  date = MONTH_FIRST.exec(text)
  if (date !== null) return isDay(+date[4], +date[1], +date[3])
  if (year[1] === undefined) return true // an expanded year (+002026-11-30): Date.parse's own ISO check
  date = NAMED_DATE.exec(text)
  if (date === null) return true // Date.parse's other forms: it checks them itself
  const month = MONTHS.indexOf((date[1] || date[4]).toLowerCase()) + 1
  return isDay(+year[1], month, +(date[2] || date[3]))
}

function isDay (year, month, day) {
  const date = new Date(Date.UTC(year, month - 1, day))
  return month >= 1 && month <= 12 && day >= 1 && date.getUTCMonth() === month - 1 && date.getUTCDate() === day
}

function parseTime (text) {
  const trimmed = String(text).trim()
  if (!isCalendarDate(trimmed)) return NaN
  const read = Date.parse(trimmed)
  const bare = trimmed.replace(/\s*\([^()]*\)$/, '') // Date#toString's zone name, a comment
  if (Number.isNaN(read) || OFFSET.test(bare) || NAMED.test(bare)) return read
  for (const zoned of [`${bare} GMT`, `${bare}Z`]) {
    const utc = Date.parse(zoned)
    if (!Number.isNaN(utc)) return utc
  }
  return read - new Date(read).getTimezoneOffset() * 60000
}

module.exports = { parseTime, commandConfig, usageError, takePositionals, launcherOptions, defaultStatsDir, formatTable, formatUptime, formatBytes }
