# Sourced by the device scripts: start nvidia-smi's own 100 ms log of GPU 0 (clocks, power,
# limit, temperature, utilisation, clocks-event reasons) into $1; its pid is in $smi.
F=clocks_event_reasons.active
nvidia-smi --query-gpu=$F --format=csv >/dev/null 2>&1 || F=clocks_throttle_reasons.active
nvidia-smi -i 0 --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu,utilization.gpu,$F \
  --format=csv -lms 100 > "$1" 2>&1 &
smi=$!
