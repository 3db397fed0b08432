-- nsysql: macros.hex_le_uint v1
-- purpose: The unsigned little-endian integer of `width` bytes (1 to 8) at byte `byte_offset` of binary data written as hex text: `hex_le_uint('2A000000', 0, 4)` is 42; NULL where the bytes lie outside the data or are not hex digits.
-- requires: none
-- params: none
-- notes: A scalar macro (inlined where it is called); nccl_payload decodes NVTX payload blobs with it (and
--   macros.hex_le_int). DuckDB 1.5 has no substring or byte access on a BLOB, so a blob is read as the hex text
--   SQLite's hex() writes (two digits per byte, either case). The field's digits are read as one big-endian number
--   (one substring, one cast), whose bytes are then reversed with shifts and masks: a 64-bit byte swap, shifted
--   down by the bytes the field does not have (cheaper than putting the digits in reverse order as text, by eight
--   substrings or a list lambda: a one-off comparison on 486,000 blobs, not a bench figure). DuckDB gives <<, >>, & and |
--   one precedence, read left to right, hence the parentheses around every term. The eight terms repeat one
--   expression, the field read as a big-endian number, which DuckDB evaluates once; the offsets' check sits
--   inside it (a CASE around the terms would make DuckDB evaluate each of them).
-- columns:
--   hex_le_uint | UBIGINT | count (the value)
CREATE OR REPLACE TEMP MACRO hex_le_uint(h, byte_offset, width) AS
    CAST((((TRY_CAST('0x' || substr(CASE WHEN byte_offset >= 0 AND width BETWEEN 1 AND 8 AND length(h) >= 2 * (byte_offset + width) THEN h END, CAST(2 * byte_offset + 1 AS BIGINT), CAST(2 * width AS BIGINT)) AS UBIGINT) & 255) << 56)
     | (((TRY_CAST('0x' || substr(CASE WHEN byte_offset >= 0 AND width BETWEEN 1 AND 8 AND length(h) >= 2 * (byte_offset + width) THEN h END, CAST(2 * byte_offset + 1 AS BIGINT), CAST(2 * width AS BIGINT)) AS UBIGINT) >> 8) & 255) << 48)
     | (((TRY_CAST('0x' || substr(CASE WHEN byte_offset >= 0 AND width BETWEEN 1 AND 8 AND length(h) >= 2 * (byte_offset + width) THEN h END, CAST(2 * byte_offset + 1 AS BIGINT), CAST(2 * width AS BIGINT)) AS UBIGINT) >> 16) & 255) << 40)
     | (((TRY_CAST('0x' || substr(CASE WHEN byte_offset >= 0 AND width BETWEEN 1 AND 8 AND length(h) >= 2 * (byte_offset + width) THEN h END, CAST(2 * byte_offset + 1 AS BIGINT), CAST(2 * width AS BIGINT)) AS UBIGINT) >> 24) & 255) << 32)
     | (((TRY_CAST('0x' || substr(CASE WHEN byte_offset >= 0 AND width BETWEEN 1 AND 8 AND length(h) >= 2 * (byte_offset + width) THEN h END, CAST(2 * byte_offset + 1 AS BIGINT), CAST(2 * width AS BIGINT)) AS UBIGINT) >> 32) & 255) << 24)
     | (((TRY_CAST('0x' || substr(CASE WHEN byte_offset >= 0 AND width BETWEEN 1 AND 8 AND length(h) >= 2 * (byte_offset + width) THEN h END, CAST(2 * byte_offset + 1 AS BIGINT), CAST(2 * width AS BIGINT)) AS UBIGINT) >> 40) & 255) << 16)
     | (((TRY_CAST('0x' || substr(CASE WHEN byte_offset >= 0 AND width BETWEEN 1 AND 8 AND length(h) >= 2 * (byte_offset + width) THEN h END, CAST(2 * byte_offset + 1 AS BIGINT), CAST(2 * width AS BIGINT)) AS UBIGINT) >> 48) & 255) << 8)
     | (TRY_CAST('0x' || substr(CASE WHEN byte_offset >= 0 AND width BETWEEN 1 AND 8 AND length(h) >= 2 * (byte_offset + width) THEN h END, CAST(2 * byte_offset + 1 AS BIGINT), CAST(2 * width AS BIGINT)) AS UBIGINT) >> 56))
    >> (64 - 8 * width) AS UBIGINT);
