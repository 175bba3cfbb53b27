'use strict'

const { takePositionals } = require('./common')

const USAGE = 'collector run <collector> [flags]'

/**
 * `collector run <collector> [flags]`: the collector entry, in this
 * process, so that one Ctrl-C reaches one master (the workers ignore it and
 * are drained). The entry owns exit codes: 0 after a drain, 2 on bad flags.
 */
async function run (argv) {
  const { values: [collector], rest } = takePositionals(argv, ['collector'], USAGE)
  await require('../collector-entry').main([collector, ...rest])
  return null
}

module.exports = { run, USAGE }
