"""What record batches are encoded with: the compression codecs (:mod:`.compression`: gzip,
snappy, lz4, zstd, bounded decompression) and the CRC32C checksum (:mod:`.crc`, compiled or
its pure-Python twin)."""
