#!/usr/bin/env node
'use strict'

// The `collector` CLI: one file per command in bin/commands/.

const COMMANDS = ['run', 'start', 'stop', 'restart', 'delete', 'ls', 'status', 'replay', 'logs', 'top', 'calls', 'db', 'simulate', 'verify', 'demo', 'help']
const ALIASES = { list: 'ls', rm: 'delete', '--help': 'help', '-h': 'help' }
const EXIT_USAGE = 2

/**
 * Runs one command. Resolves with the exit code, or null when the command
 * keeps the process running (run, top).
 * @param {string[]} argv arguments after `collector`
 * @returns {Promise<number|null>}
 */
async function main (argv) {
  const [given, ...rest] = argv
  if (given === '--version' || given === '-V') {
    process.stdout.write(`collector-cluster ${require('../package.json').version}\n`)
    return 0
  }
  const name = ALIASES[given] || given
  if (!COMMANDS.includes(name)) {
    process.stderr.write(given ? `collector: unknown command ${JSON.stringify(given)}\n\n` : '')
    process.stderr.write(require('../app/commands/help').text())
    return EXIT_USAGE
  }
  process.stdout.on('error', (err) => readerGone(err, name))
  try {
    return await require(`../app/commands/${name}`).run(rest, { command: name })
  } catch (err) {
    return report(err)
  }
}

// stdout's reader went away (`collector calls --json | head -1`): a command
// that prints ends there, quietly, as `head` asked; a collector (run) goes
// on without it (its log stops: app/pretty-log.js). Any other write error is thrown.
function readerGone (err, name) {
  if (err.code !== 'EPIPE') throw err
  if (name !== 'run') process.exit(0)
}

// Errors the user can act on are one line (or the config's list), no stack.
function report (err) {
  if (err && err.code === 'ERR_HELP') { // asked for: not an error
    process.stdout.write(`${err.message}\n`)
    return 0
  }
  const usage = err && (err.code === 'ERR_INVALID_CONFIG' || err.code === 'ERR_USAGE' || err.code === 'ERR_UNKNOWN_COLLECTOR' || err.code === 'ERR_INVALID_COLLECTOR')
  const message = err && err.message ? err.message : String(err)
  process.stderr.write(`collector: ${message}\n`)
  if (process.env.COLLECTOR_DEBUG && err && err.stack) process.stderr.write(`${err.stack}\n`)
  return usage ? EXIT_USAGE : 1
}

if (require.main === module) {
  main(process.argv.slice(2)).then((code) => {
    if (code !== null && code !== undefined) process.exitCode = code
  })
}

module.exports = { main, COMMANDS }
