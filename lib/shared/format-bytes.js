'use strict'

/** 1380 → "1.3 KiB", 1073741824 → "1.0 GiB" (powers of 1024, as --buffer-max-bytes and --max-storage take them). */
function formatBytes (bytes) {
  if (!(bytes >= 1024)) return `${bytes > 0 ? bytes : 0} B`
  const units = ['KiB', 'MiB', 'GiB', 'TiB', 'PiB']
  let value = bytes / 1024
  let unit = 0
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024
    unit++
  }
  return `${value.toFixed(1)} ${units[unit]}`
}

module.exports = { formatBytes }
