-- nsysql: macros.hex_le_int v1
-- purpose: The little-endian integer of `width` bytes (1 to 8) at byte `byte_offset` of binary data written as hex text, as a BIGINT: two's complement when `is_signed` (`hex_le_int('FFFF', 0, 2, true)` is -1), else unsigned (65535); NULL where the bytes lie outside the data, or an unsigned value passes the BIGINT range.
-- requires: macros.hex_le_uint
-- params: none
-- notes: A scalar macro (inlined where it is called); nccl_payload reads the signed and unsigned integer entries of
--   NVTX payloads with it. The sign is extended with arithmetic, not a CASE: (x XOR m) - m with m the top bit of
--   the field (0 when unsigned).
-- columns:
--   hex_le_int | BIGINT | count (the value)
CREATE OR REPLACE TEMP MACRO hex_le_int(h, byte_offset, width, is_signed) AS
    TRY_CAST(xor(CAST(hex_le_uint(h, byte_offset, width) AS HUGEINT),
                 CAST(is_signed AS HUGEINT) << CAST(8 * width - 1 AS INTEGER))
             - (CAST(is_signed AS HUGEINT) << CAST(8 * width - 1 AS INTEGER)) AS BIGINT);
