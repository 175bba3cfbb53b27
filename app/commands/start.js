'use strict'

const launcher = require('../launcher')
const { loadCollector } = require('../collector-registry')
const { takePositionals, launcherOptions, usageError } = require('./common')

const USAGE = 'collector start <collector> [flags] | collector start <name>'

/**
 * `collector start <collector> [flags]`: under PM2, returns once ready.
 * `collector start <name>` (no flags) starts a stopped collector of that
 * name again, with the flags it was started with.
 */
async function run (argv) {
  const { values: [collector], rest } = takePositionals(argv, ['collector'], USAGE)
  if (rest.includes('--help') || rest.includes('-h')) {
    const { Config } = loadCollector(collector)
    // The collector's usage says `collector run`: the same flags, said for start.
    process.stdout.write(new Config(rest).help().replace(/^Usage: collector run /, 'Usage: collector start '))
    return 0
  }
  const options = launcherOptions()
  const existing = rest.length === 0 ? await launcher.find(collector, options) : null
  const proc = existing ? await launcher.resume(collector, options) : await startNew(collector, rest, options)
  if (proc.movedFrom) process.stdout.write(`moved ${proc.name} from the install at ${proc.movedFrom} to this one (${launcher.INSTALL}), with the flags and environment it had\n`)
  process.stdout.write(`started ${proc.name} (pid ${proc.pid}); see \`collector status ${proc.name}\`\n`)
  return 0
}

// Flags after the name of a collector PM2 already has: it starts again
// only as it was started (its flags are PM2's to keep), said as such.
async function startNew (collector, flags, options) {
  try {
    return await launcher.start(collector, flags, options)
  } catch (err) {
    if (err.code !== 'ERR_UNKNOWN_COLLECTOR') throw err
    if (!await launcher.find(collector, options)) throw flags.length ? err : lostHint(err, collector)
    throw usageError(`${collector} is a collector PM2 has: \`collector start ${collector}\` (no flags) starts it again with the flags it was started with; for others, \`collector delete ${collector}\`, then start it anew with them`)
  }
}

// `collector start NAME` of a collector this PM2 daemon does not know: one
// that ran under a daemon since gone (a machine restart without \`pm2 save\`)
// is not remembered by this one.
function lostHint (err, name) {
  err.message += `; if ${name} is a collector that ran under a PM2 daemon since gone (a reboot, \`pm2 kill\`), start it again with its collector and flags (\`collector start <collector> --name ${name} …\`), or restore it with \`pm2 resurrect\` if \`pm2 save\` was run`
  return err
}

module.exports = { run, USAGE }
