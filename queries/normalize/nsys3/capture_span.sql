-- nsysql: normalize.nsys3.capture_span v1
-- purpose: The capture's time span (ANALYSIS_DETAILS), in the export's nanosecond clock.
-- requires: raw.ANALYSIS_DETAILS
-- params: none
-- columns:
--   start_ns | BIGINT | ns
--   end_ns | BIGINT | ns
--   duration_ns | BIGINT | ns
CREATE TABLE capture_span AS
SELECT MIN(startTime) AS start_ns, MAX(stopTime) AS end_ns, MAX(stopTime) - MIN(startTime) AS duration_ns
FROM raw.ANALYSIS_DETAILS;
