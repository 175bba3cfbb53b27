'use strict'

const { takePositionals } = require('./common')
const { relayNpmShellSignals } = require('../npm-shell-signals')

const USAGE = 'collector run <collector> [flags]'

/**
 * `collector run <collector> [flags]`: the collector entry, in this
 * process, so that one Ctrl-C reaches one master (the workers ignore it and
 * are drained). The entry owns exit codes: 0 after a drain, 2 on bad flags.
 * Run by npx or an npm script, a signal sent to npm is relayed here from
 * the shell npm puts between (app/npm-shell-signals.js).
 */
async function run (argv) {
  const { values: [collector], rest } = takePositionals(argv, ['collector'], USAGE)
  // main() installs the entry's signal handlers before its first await;
  // the relay raises signals from a timer, so only after that.
  const running = require('../collector-entry').main([collector, ...rest])
  relayNpmShellSignals()
  await running
  return null
}

module.exports = { run, USAGE }
