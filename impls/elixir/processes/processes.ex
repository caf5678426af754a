defmodule Corobench.Processes do
  @moduledoc """
  corobench on plain BEAM processes (docs/protocol.md), id "elixir".

  chain:    each receiver is a process that spawns its own sender process. The
            mailbox is unbounded, so the queue of capacity Q is a credit
            window: the sender starts with Q credits and spends one per event;
            it blocks in `receive` when it has none. The receiver hands back
            `batch = max(1, div(Q, 2))` credits in one `{:credit, batch}`
            message each time it has consumed `batch` events. So at most Q
            events are ever sent and not yet consumed.
  tasks:    N processes, each `Process.sleep(D)` and then sends `:done` to the
            main process, which counts N of them.
  blocking: T processes per iteration, each opens /dev/urandom, reads B bytes,
            opens /dev/null and writes them. "file": `File.open` (a file I/O
            server process per open file, IO.binread / IO.binwrite); "raw":
            `:file.open(path, [:raw, :binary, ...])` (the calling process owns
            the file; prim_file NIF calls run on the dirty I/O schedulers).
  --threads N: the VM is started with `+S N:N` by the `run` wrapper.
  """

  alias Corobench.CLI

  @id "elixir"
  @variants ["file", "raw"]
  @shared_key :corobench_shared_string

  def main(argv) do
    p = CLI.parse(argv, @id, @variants)
    # The main process collects one message per task/receiver while it is still
    # spawning: kept off its heap, they are not copied by every one of its GCs.
    Process.flag(:message_queue_data, :off_heap)
    # Errors are reported by this program in one stderr line; no logger output.
    :logger.set_primary_config(:level, :none)
    threads = :erlang.system_info(:schedulers_online)

    if p.threads != nil and p.threads != threads do
      CLI.refused(
        "started #{threads} of #{p.threads} schedulers: the BEAM runs at most " <>
          "#{:erlang.system_info(:schedulers)} here (at most 1024)"
      )
    end

    case p.scenario do
      :chain -> chain(p, threads)
      :tasks -> tasks(p, threads)
      :blocking -> blocking(p, threads)
      _server -> Corobench.Servers.main(p, threads)
    end

    System.halt(0)
  end

  # ------------------------------------------------------------------ chain --

  defp chain(p, threads) do
    bin = :binary.copy("x", p.esize)
    # str_ptr: the one shared string lives in the persistent term storage;
    # events carry its key and the receiver reads it without copying.
    :persistent_term.put(@shared_key, bin)

    payload =
      case p.etype do
        :int -> p.esize
        :str_ptr -> @shared_key
        _ -> bin
      end

    expected = p.workers * p.events * p.esize

    for k <- 1..p.warmup//1 do
      {sum, received, _} = chain_pass(p, payload)

      if sum != expected or received != p.workers * p.events,
        do: CLI.die(1, "warm-up pass #{k}: wrong checksum #{sum}")
    end

    {sum, received, elapsed} = chain_pass(p, payload)

    CLI.print_json(
      scenario: "chain",
      workers: p.workers,
      events: p.events,
      queue: p.queue,
      etype: p.etype,
      esize: p.esize,
      threads: threads,
      warmup: p.warmup,
      received: received,
      checksum: sum,
      elapsed_ns: elapsed
    )
  end

  defp chain_pass(p, payload) do
    parent = self()
    %{workers: w, events: e, queue: q, etype: etype} = p
    batch = max(1, div(q, 2))
    t0 = :erlang.monotonic_time(:nanosecond)
    spawn_receivers(w, parent, etype, payload, e, q, batch)
    {sum, received} = collect_done(w, 0, 0)
    t1 = :erlang.monotonic_time(:nanosecond)
    {sum, received, t1 - t0}
  end

  defp spawn_receivers(0, _parent, _etype, _payload, _e, _q, _batch), do: :ok

  defp spawn_receivers(n, parent, etype, payload, e, q, batch) do
    spawn(fn -> receiver(parent, etype, payload, e, q, batch) end)
    spawn_receivers(n - 1, parent, etype, payload, e, q, batch)
  end

  defp collect_done(0, sum, received), do: {sum, received}

  defp collect_done(n, sum, received) do
    receive do
      {:done, s, r} -> collect_done(n - 1, sum + s, received + r)
    end
  end

  defp receiver(parent, etype, payload, e, q, batch) do
    rx = self()

    tx =
      spawn(fn ->
        case etype do
          :int -> send_int(rx, e, q, payload)
          :str -> send_str(rx, e, q, payload)
          :str_ptr -> send_ptr(rx, e, q, payload)
          :str_clone -> send_clone(rx, e, q, payload)
        end
      end)

    sum = receive_loop(tx, e, 0, batch, batch)
    send(parent, {:done, sum, e})
  end

  # Sender loops, one per event type: (receiver, events left, credits, payload).
  defp send_int(_rx, 0, _c, _v), do: :ok
  defp send_int(rx, n, 0, v), do: send_int(rx, n, await_credit(), v)

  defp send_int(rx, n, c, v) do
    send(rx, {:int, v})
    send_int(rx, n - 1, c - 1, v)
  end

  defp send_str(_rx, 0, _c, _b), do: :ok
  defp send_str(rx, n, 0, b), do: send_str(rx, n, await_credit(), b)

  defp send_str(rx, n, c, b) do
    send(rx, {:str, b})
    send_str(rx, n - 1, c - 1, b)
  end

  defp send_ptr(_rx, 0, _c, _k), do: :ok
  defp send_ptr(rx, n, 0, k), do: send_ptr(rx, n, await_credit(), k)

  defp send_ptr(rx, n, c, k) do
    send(rx, {:str_ptr, k})
    send_ptr(rx, n - 1, c - 1, k)
  end

  defp send_clone(_rx, 0, _c, _b), do: :ok
  defp send_clone(rx, n, 0, b), do: send_clone(rx, n, await_credit(), b)

  defp send_clone(rx, n, c, b) do
    send(rx, {:str_clone, :binary.copy(b)})
    send_clone(rx, n - 1, c - 1, b)
  end

  defp await_credit do
    receive do
      {:credit, c} -> c
    end
  end

  # (sender, events left, checksum, events until the next credit message, batch)
  defp receive_loop(_tx, 0, sum, _left, _batch), do: sum

  defp receive_loop(tx, n, sum, left, batch) do
    w =
      receive do
        {:int, v} -> v
        {:str, b} -> byte_size(b)
        {:str_ptr, k} -> byte_size(:persistent_term.get(k))
        {:str_clone, b} -> byte_size(b)
      end

    if left == 1 do
      send(tx, {:credit, batch})
      receive_loop(tx, n - 1, sum + w, batch, batch)
    else
      receive_loop(tx, n - 1, sum + w, left - 1, batch)
    end
  end

  # ------------------------------------------------------------------ tasks --

  defp tasks(p, threads) do
    parent = self()
    %{tasks: n, sleep_ms: d} = p
    # A spawn beyond the process table raises system_limit; check before the
    # clock starts rather than catching it in the timed spawn loop.
    limit = :erlang.system_info(:process_limit)
    running = :erlang.system_info(:process_count)

    if running + n > limit,
      do:
        CLI.refused(
          "started 0 of #{n} processes: the process limit is #{limit} " <>
            "(#{running} already running)"
        )

    t0 = :erlang.monotonic_time(:nanosecond)
    spawn_sleepers(n, parent, d)
    t1 = :erlang.monotonic_time(:nanosecond)
    count = count_done(n, 0)
    t2 = :erlang.monotonic_time(:nanosecond)

    CLI.print_json(
      scenario: "tasks",
      tasks: n,
      sleep_ms: d,
      threads: threads,
      checksum: count,
      spawn_ns: t1 - t0,
      elapsed_ns: t2 - t0
    )
  end

  defp spawn_sleepers(0, _parent, _d), do: :ok

  defp spawn_sleepers(n, parent, d) do
    spawn(fn ->
      Process.sleep(d)
      send(parent, :done)
    end)

    spawn_sleepers(n - 1, parent, d)
  end

  defp count_done(0, count), do: count

  defp count_done(n, count) do
    receive do
      :done -> count_done(n - 1, count + 1)
    end
  end

  # --------------------------------------------------------------- blocking --

  defp blocking(p, threads) do
    %{tasks: t, iterations: i, bytes: b, variant: variant} = p
    copy = if variant == "raw", do: &copy_raw/1, else: &copy_file/1
    _ = iteration(t, b, copy)
    t0 = :erlang.monotonic_time(:nanosecond)
    total = Enum.reduce(1..i, 0, fn _, acc -> acc + iteration(t, b, copy) end)
    t1 = :erlang.monotonic_time(:nanosecond)

    CLI.print_json(
      scenario: "blocking",
      tasks: t,
      iterations: i,
      bytes: b,
      variant: variant,
      threads: threads,
      # Both variants make their file calls through prim_file NIFs, which run
      # on the dirty I/O schedulers ("file": in the file's I/O server process).
      pool_threads: :erlang.system_info(:dirty_io_schedulers),
      checksum: total,
      elapsed_ns: t1 - t0
    )
  end

  # Spawns t processes, each copying b bytes; returns the bytes they wrote.
  # A failing task reports to the main process, which alone prints the one
  # error line and exits.
  defp iteration(t, b, copy) do
    parent = self()

    for _ <- 1..t//1 do
      spawn(fn ->
        result =
          try do
            {:written, copy.(b)}
          catch
            {:io_failed, code, msg} -> {:failed, code, msg}
          end

        send(parent, result)
      end)
    end

    sum_written(t, 0)
  end

  defp sum_written(0, acc), do: acc

  defp sum_written(n, acc) do
    receive do
      {:written, w} -> sum_written(n - 1, acc + w)
      {:failed, code, msg} -> CLI.die(code, msg)
    end
  end

  # "file": Elixir's File/IO modules; every File.open starts an I/O server process.
  defp copy_file(b) do
    inp = ok!(File.open("/dev/urandom", [:read, :binary]), "open /dev/urandom")
    data = read_all(fn n -> IO.binread(inp, n) end, b, [])
    :ok = File.close(inp)
    out = ok!(File.open("/dev/null", [:write, :binary]), "open /dev/null")
    :ok = IO.binwrite(out, data)
    :ok = File.close(out)
    :erlang.iolist_size(data)
  end

  # "raw": the process itself owns the file descriptors (prim_file NIFs).
  defp copy_raw(b) do
    inp = ok!(:file.open("/dev/urandom", [:read, :raw, :binary]), "open /dev/urandom")

    data =
      read_all(
        fn n ->
          case :file.read(inp, n) do
            {:ok, d} -> d
            other -> other
          end
        end,
        b,
        []
      )

    :ok = :file.close(inp)
    out = ok!(:file.open("/dev/null", [:write, :raw, :binary]), "open /dev/null")
    :ok = :file.write(out, data)
    :ok = :file.close(out)
    :erlang.iolist_size(data)
  end

  # Reads until `left` bytes have arrived; returns iodata.
  defp read_all(_read, 0, acc), do: Enum.reverse(acc)

  defp read_all(read, left, acc) do
    case read.(left) do
      d when is_binary(d) -> read_all(read, left - byte_size(d), [d | acc])
      :eof -> throw({:io_failed, 1, "read /dev/urandom: unexpected end of file"})
      {:error, r} -> io_failed("read /dev/urandom", r)
    end
  end

  defp ok!({:ok, f}, _what), do: f
  defp ok!({:error, r}, what), do: io_failed(what, r)

  defp io_failed(what, reason) do
    code = if reason in [:emfile, :enfile, :enomem, :system_limit], do: 3, else: 1
    throw({:io_failed, code, "#{what}: #{:file.format_error(reason)}"})
  end
end
