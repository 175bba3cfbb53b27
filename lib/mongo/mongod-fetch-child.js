'use strict'

// Runs in a process of its own, forked by ./mongod-fetch.js: fetches a
// mongod through mongodb-memory-server-core. That package reads its
// settings (MONGOMS_*) from process.env and prints its progress to stdout;
// here it gets the environment the parent chose, and its progress goes to
// the parent as messages. The parent bounds the time and kills this
// process when it is up; a partial download is resumed by the next one.
//
// Messages: { event: 'start', version, url, dir }, { event: 'progress',
// bytes, total }, then { event: 'done', binary } or { event: 'failed', reason }.

const fs = require('node:fs')
const { DryMongoBinary } = require('mongodb-memory-server-core/lib/util/DryMongoBinary')
const { MongoBinary } = require('mongodb-memory-server-core/lib/util/MongoBinary')
const { MongoBinaryDownload } = require('mongodb-memory-server-core/lib/util/MongoBinaryDownload')
const { MongoBinaryDownloadUrl } = require('mongodb-memory-server-core/lib/util/MongoBinaryDownloadUrl')

const PROGRESS_EVERY_MS = 250

function send (message) {
  return new Promise((resolve) => process.send(message, resolve))
}

// Instead of its lines on stdout: the byte counts, to the parent.
let lastSent = 0
MongoBinaryDownload.prototype.printDownloadProgress = function (chunk, force = false) {
  this.dlProgress.current += chunk.length
  const now = Date.now()
  if (!force && now - lastSent < PROGRESS_EVERY_MS) return
  lastSent = now
  process.send({ event: 'progress', url: this._downloadingUrl, bytes: this.dlProgress.current, total: this.dlProgress.length })
}

// Its tar extraction resolves once the archive is read and checks for the
// binary at once, while the binary's own write stream may not have opened
// yet: a moment later the file is there.
const extract = MongoBinaryDownload.prototype.extract
MongoBinaryDownload.prototype.extract = async function (archive) {
  try {
    return await extract.call(this, archive)
  } catch (err) {
    const binary = await this.getPath()
    for (let i = 0; i < 20 && !fs.existsSync(binary); i++) await new Promise((resolve) => setTimeout(resolve, 100))
    if (fs.existsSync(binary)) return binary
    throw err
  }
}

async function main () {
  const options = await DryMongoBinary.generateOptions({})
  const url = await new MongoBinaryDownloadUrl(options).getDownloadUrl()
  await send({ event: 'start', version: options.version, url, dir: options.downloadDir })
  const binary = await MongoBinary.getPath()
  await send({ event: 'done', binary })
}

main().then(() => process.exit(0), async (err) => {
  // mongodb-memory-server's download errors read "Download failed for url "…", Details:\n<why>"
  const reason = String((err && err.message) || err).replace(/,? Details:\s*\n/, ': ').replace(/\s*\n\s*/g, ' ')
  await send({ event: 'failed', reason })
  process.exit(1)
})
