'use strict'
// Every PM2 daemon a test starts lives in a PM2 home made here. After the
// test its daemon is stopped, then the home removed: in the other order
// (t.after hooks run first registered, first run) killDaemon finds no
// pm2.pid in a removed home and the daemon outlives the suite, as the
// `collector db start` tests' daemons did. When the test file ends, a check
// fails it if any home it made still has a daemon (and stops that daemon).
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { after } = require('node:test')
const launcher = require('../../app/launcher')

const homes = []
// Registered when the test file requires this helper, so on the file's root:
// called inside a test, after() would join that test's own hooks.
after(noDaemonLeft)

/**
 * A fresh PM2 home (`<tmp>/collector-pm2-XXXX/pm2`; its parent directory is
 * the test's to use too, for stats files and the like).
 * @returns {string}
 */
function pm2Home (t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'collector-pm2-'))
  const home = path.join(dir, 'pm2')
  homes.push(home)
  t.after(async () => {
    await launcher.killDaemon({ pm2Home: home })
    fs.rmSync(dir, { recursive: true, force: true })
  })
  return home
}

/**
 * The PM2 daemons running for one of `homes`, from the title PM2 gives its
 * daemon: `PM2 v<version>: God Daemon (<PM2_HOME>)`. Linux (/proc).
 * @returns {{ pid: number, home: string }[]}
 */
function daemonsOf (wanted) {
  const found = []
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    let title
    try {
      title = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0+$/, '')
    } catch {
      continue
    }
    const match = /^PM2 v\S+: God Daemon \((.+)\)$/.exec(title)
    if (match && wanted.includes(match[1])) found.push({ pid: Number(entry), home: match[1] })
  }
  return found
}

// SIGTERM: PM2's daemon stops its apps before it exits.
function noDaemonLeft () {
  const left = daemonsOf(homes)
  for (const { pid } of left) {
    try { process.kill(pid, 'SIGTERM') } catch {}
  }
  if (left.length > 0) throw new Error(`PM2 daemons outlived their tests: ${left.map((d) => `${d.pid} (${d.home})`).join(', ')}`)
}

module.exports = { pm2Home, daemonsOf }
