# Ruby's side of BenchmarkPipe and BenchmarkSelect (bench/io_test.go): two
# threads under the GVL bounce one byte over two pipes, the shape of Ruby's
# vm_thread_pipe benchmark. "pipe" reads with IO#read, which waits for the
# fd with the GVL released; "select" waits in IO.select first, as seed 004's
# loop does, then reads with read_nonblock. One op is one round trip.
#
#   ruby bench/ruby/pipe.rb [rounds] [runs]
#
# prints, per variant and run, µs per round trip, then the median of the
# runs.

rounds = (ARGV[0] || 50_000).to_i
runs = (ARGV[1] || 5).to_i

def bounce(rounds, use_select)
  ar, aw = IO.pipe
  br, bw = IO.pipe
  read = if use_select
    ->(r) { IO.select([r]); r.read_nonblock(1) }
  else
    ->(r) { r.read(1) }
  end
  echo = Thread.new do
    rounds.times do
      c = read.(ar)
      bw.write(c)
    end
  end
  start = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  rounds.times do |i|
    c = (i % 256).chr
    aw.write(c)
    got = read.(br)
    raise "round #{i}: echo #{got.inspect}, want #{c.inspect}" unless got == c
  end
  elapsed = Process.clock_gettime(Process::CLOCK_MONOTONIC) - start
  echo.join
  [ar, aw, br, bw].each(&:close)
  elapsed * 1e6 / rounds
end

puts "ruby #{RUBY_VERSION}, #{rounds} round trips per run"
results = { "pipe" => [], "select" => [] }
runs.times do
  results.each_key do |name|
    results[name] << bounce(rounds, name == "select")
  end
end
results.each do |name, us|
  median = us.sort[us.size / 2]
  printf("%-6s %s  median %.1f µs/op\n", name, us.map { |u| format("%.1f", u) }.join(" "), median)
end
