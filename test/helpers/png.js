'use strict'
// Reads the pixels of an 8-bit, non-interlaced RGB or RGBA PNG (what
// headless Chromium's --screenshot writes), by the PNG specification:
// chunks, zlib-compressed IDAT, per-row filters 0–4.
const zlib = require('node:zlib')

const CHANNELS = { 2: 3, 6: 4 }

/** @returns {{ width: number, height: number, channels: number, pixels: Buffer }} rows unfiltered, no filter bytes */
function readPng (buf) {
  if (buf.readUInt32BE(0) !== 0x89504e47) throw new Error('not a PNG')
  let offset = 8
  const idat = []
  let header = null
  while (offset < buf.length) {
    const length = buf.readUInt32BE(offset)
    const type = buf.toString('latin1', offset + 4, offset + 8)
    const data = buf.subarray(offset + 8, offset + 8 + length)
    if (type === 'IHDR') header = { width: data.readUInt32BE(0), height: data.readUInt32BE(4), depth: data[8], colorType: data[9], interlace: data[12] }
    if (type === 'IDAT') idat.push(data)
    offset += 12 + length
  }
  const channels = CHANNELS[header.colorType]
  if (header.depth !== 8 || !channels || header.interlace !== 0) throw new Error(`unsupported PNG ${JSON.stringify(header)}`)
  return { width: header.width, height: header.height, channels, pixels: unfilter(zlib.inflateSync(Buffer.concat(idat)), header.width * channels, header.height, channels) }
}

function unfilter (raw, stride, height, bpp) {
  const out = Buffer.alloc(stride * height)
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)]
    const row = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1))
    for (let x = 0; x < stride; x++) {
      const a = x >= bpp ? out[y * stride + x - bpp] : 0
      const b = y > 0 ? out[(y - 1) * stride + x] : 0
      const c = x >= bpp && y > 0 ? out[(y - 1) * stride + x - bpp] : 0
      out[y * stride + x] = (row[x] + predictor(filter, a, b, c)) & 0xff
    }
  }
  return out
}

function predictor (filter, a, b, c) {
  if (filter === 0) return 0
  if (filter === 1) return a
  if (filter === 2) return b
  if (filter === 3) return (a + b) >> 1
  const p = a + b - c
  const pa = Math.abs(p - a)
  const pb = Math.abs(p - b)
  const pc = Math.abs(p - c)
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c
}

/** How many pixels of `png` left of column `maxX` are exactly the colour `#rrggbb`. */
function countColor (png, hex, { maxX = png.width } = {}) {
  const [r, g, b] = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16))
  let n = 0
  for (let y = 0; y < png.height; y++) {
    for (let x = 0; x < maxX; x++) {
      const i = (y * png.width + x) * png.channels
      if (png.pixels[i] === r && png.pixels[i + 1] === g && png.pixels[i + 2] === b) n++
    }
  }
  return n
}

module.exports = { readPng, countColor }
