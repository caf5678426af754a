defmodule Corobench.Servers do
  @moduledoc """
  The server scenarios (docs/protocol.md "Servers: echo and http") on
  :gen_tcp, one BEAM process per connection.

  Acceptors: one process per scheduler waits in `:gen_tcp.accept/1` on the
  shared listen socket; the process that accepted a connection spawns the
  next acceptor and then serves that connection itself, so it already owns
  the socket (no `controlling_process` hand-over).

  Sockets are passive (`active: false`): a handler reads with
  `:gen_tcp.recv/2`, which for echo asks the inet driver for exactly the
  missing bytes of a request (the driver collects them into one binary).

  Counting: a handler keeps its counts in its loop arguments and sends them
  to the main process when its connection ends ({:closed, ...}); it also
  tells the main process when it starts ({:opened, ...}), so that the stop
  sequence knows the connections still open. Two messages per connection,
  nothing per request.

  Stop: SIGTERM reaches `Corobench.Servers.Signals` (installed in place of
  the VM's default handler, which would call init:stop/0); the main process
  closes the listen socket, waits up to 2 s for the open connections to end,
  closes what is left, prints the final line and halts with 0.
  """

  alias Corobench.CLI

  @stop_wait_ms 2000
  # gen_tcp's default listen backlog is 5; ask for the kernel's limit
  # (net.core.somaxconn caps it), as Go, Node (511) and Python (4096) do.
  @backlog 4096

  def main(p, threads) do
    family = if tuple_size(p.ip) == 8, do: :inet6, else: :inet
    # Accepted sockets inherit these options (binary, passive, raw, nodelay).
    opts = [:binary, family, ip: p.ip, active: false, packet: :raw, nodelay: true,
            reuseaddr: true, backlog: @backlog]

    listen =
      case :gen_tcp.listen(p.port, opts) do
        {:ok, l} ->
          l

        {:error, reason} ->
          CLI.refused("bind/listen on #{p.host} port #{p.port} failed: #{:inet.format_error(reason)}")
      end

    {:ok, port} = :inet.port(listen)
    Corobench.Servers.Signals.install(self())
    # Out of file descriptors, the VM cannot load a module any more: load what
    # the exit-3 message needs now (the String.Chars implementations).
    _ = accept_failed(0, :emfile)

    main = self()

    handler =
      case p.scenario do
        :echo -> fn sock -> echo_conn(sock, main, p.size, p.uuids, p.per_connection) end
        :http -> fn sock -> http_conn(sock, main) end
      end

    for _ <- 1..threads, do: spawn(fn -> acceptor(listen, main, handler) end)

    extra =
      if p.scenario == :echo,
        do: [size: p.size, uuids: p.uuids, per_connection: p.per_connection],
        else: []
    variant = if p.variant_given, do: [variant: p.variant], else: []

    CLI.print_json(
      [ready: true, scenario: p.scenario, host: p.host, port: port] ++
        extra ++ [threads: threads] ++ variant
    )

    totals = serve(%{open: %{}, connections: 0, requests: 0, partial: 0, not_found: 0, bad: 0})
    :gen_tcp.close(listen)
    {totals, open_at_stop} = drain(totals)

    final =
      case p.scenario do
        :echo ->
          n = totals.requests

          # Every request read exactly S bytes and got one reply of S + 37U.
          [scenario: "echo", size: p.size, uuids: p.uuids, per_connection: p.per_connection, threads: threads,
           connections: totals.connections, requests: n, uuids_generated: p.uuids * n,
           bytes_in: p.size * n, bytes_out: (p.size + 37 * p.uuids) * n,
           partial: totals.partial, open_at_stop: open_at_stop]

        :http ->
          [scenario: "http", threads: threads, requests: totals.requests,
           connections: totals.connections, not_found: totals.not_found,
           bad_requests: totals.bad, open_at_stop: open_at_stop]
      end

    CLI.print_json(final ++ variant)
  end

  # The main process: counts connections until SIGTERM.
  defp serve(t) do
    receive do
      :stop -> t
      msg -> serve(count(t, msg))
    end
  end

  defp count(t, {:opened, pid, sock}),
    do: %{t | open: Map.put(t.open, pid, sock), connections: t.connections + 1}

  defp count(t, {:closed, pid, requests, partial, not_found, bad}) do
    %{t | open: Map.delete(t.open, pid), requests: t.requests + requests,
          partial: t.partial + partial, not_found: t.not_found + not_found, bad: t.bad + bad}
  end

  defp count(t, {:accept_failed, reason}),
    do: CLI.refused(accept_failed(t.connections, reason))


  defp count(t, :stop), do: t

  defp accept_failed(connections, reason),
    do: "accepted #{connections} connections, then accept failed: #{:inet.format_error(reason)}"

  # Waits up to 2 s for the open connections to end, then closes the rest and
  # collects their counts. Returns the totals and how many were still open.
  defp drain(t) do
    deadline = :erlang.monotonic_time(:millisecond) + @stop_wait_ms
    t = drain_until(t, deadline)
    left = map_size(t.open)

    if left > 0 do
      # Closing a socket makes its handler's recv return {:error, :closed}:
      # it then reports its counts like any other connection.
      Enum.each(t.open, fn {_pid, sock} -> :gen_tcp.close(sock) end)
      {drain_until(t, :erlang.monotonic_time(:millisecond) + 500), left}
    else
      {t, 0}
    end
  end

  defp drain_until(t, deadline) do
    if map_size(t.open) == 0 do
      t
    else
      wait = max(0, deadline - :erlang.monotonic_time(:millisecond))

      receive do
        msg -> drain_until(count(t, msg), deadline)
      after
        wait -> t
      end
    end
  end

  defp acceptor(listen, main, handler) do
    case :gen_tcp.accept(listen) do
      {:ok, sock} ->
        spawn(fn -> acceptor(listen, main, handler) end)
        send(main, {:opened, self(), sock})
        handler.(sock)

      {:error, :closed} ->
        :ok

      {:error, reason} ->
        send(main, {:accept_failed, reason})
    end
  end

  # ------------------------------------------------------------------- echo --

  # Serves until the client closes, or until `per` replies were sent (per > 0).
  defp echo_conn(sock, main, size, uuids, per) do
    {requests, partial} = echo_loop(sock, {size, uuids, per}, <<>>, 0)
    :gen_tcp.close(sock)
    send(main, {:closed, self(), requests, partial, 0, 0})
  end

  # buf: bytes read beyond the last request (empty unless the client pipelines).
  defp echo_loop(sock, {size, _, _} = e, buf, requests) do
    have = byte_size(buf)

    cond do
      have >= size ->
        <<request::binary-size(size), rest::binary>> = buf
        echo_reply(sock, e, request, rest, requests)

      have == 0 ->
        # Whatever has arrived; EOF here ends the connection normally.
        case :gen_tcp.recv(sock, 0) do
          {:ok, data} -> echo_loop(sock, e, data, requests)
          {:error, _} -> {requests, 0}
        end

      true ->
        # Exactly the missing bytes; EOF here is inside a request.
        case :gen_tcp.recv(sock, size - have) do
          {:ok, more} -> echo_reply(sock, e, [buf | more], <<>>, requests)
          {:error, _} -> {requests, 1}
        end
    end
  end

  defp echo_reply(sock, {_, uuids, per} = e, request, rest, requests) do
    case :gen_tcp.send(sock, [request | uuid_lines(uuids, [])]) do
      # the per-th reply: the server closes the connection (echo_conn)
      :ok when requests + 1 == per -> {requests + 1, 0}
      :ok -> echo_loop(sock, e, rest, requests + 1)
      {:error, _} -> {requests, 0}
    end
  end

  defp uuid_lines(0, acc), do: acc
  defp uuid_lines(n, acc), do: uuid_lines(n - 1, [uuid_line() | acc])

  # "\n" and a UUID v4 (RFC 4122 / 9562): 16 random bytes with the version
  # nibble set to 4 and the variant bits to 10, as lowercase hyphenated hex.
  defp uuid_line do
    <<a::48, _::4, b::12, _::2, c::62>> = :crypto.strong_rand_bytes(16)

    <<p1::binary-8, p2::binary-4, p3::binary-4, p4::binary-4, p5::binary-12>> =
      Base.encode16(<<a::48, 4::4, b::12, 2::2, c::62>>, case: :lower)

    <<?\n, p1::binary, ?-, p2::binary, ?-, p3::binary, ?-, p4::binary, ?-, p5::binary>>
  end

  # ------------------------------------------------------------------- http --

  # The request head is parsed with Erlang's built-in HTTP packet parser,
  # :erlang.decode_packet/3 (the parser behind the {packet, :http_bin} socket
  # option), called on the bytes the process has read, so one recv can carry
  # the whole head (and a second request, if a client pipelines).
  @max_head 65536
  @ping "/ping/"

  defp http_conn(sock, main) do
    {requests, not_found, bad} = http_loop(sock, <<>>, {0, 0, 0})
    :gen_tcp.close(sock)
    send(main, {:closed, self(), requests, 0, not_found, bad})
  end

  # counts: {200 responses, 404 responses, 400 responses}
  defp http_loop(sock, buf, counts) do
    case :erlang.decode_packet(:http_bin, buf, []) do
      {:ok, {:http_request, method, uri, version}, rest} ->
        keep = version == {1, 1}
        http_headers(sock, rest, %{method: method, uri: uri, version: version, keep: keep, length: 0}, counts)

      {:more, _} ->
        more(sock, buf, counts, fn b -> http_loop(sock, b, counts) end)

      _error_or_http_error ->
        bad_request(sock, counts)
    end
  end

  defp http_headers(sock, buf, req, counts) do
    case :erlang.decode_packet(:httph_bin, buf, []) do
      {:ok, :http_eoh, rest} ->
        skip_body(sock, rest, req, counts)

      {:ok, {:http_header, _, :Connection, _, value}, rest} ->
        http_headers(sock, rest, connection(req, value), counts)

      {:ok, {:http_header, _, :"Content-Length", _, value}, rest} ->
        case Integer.parse(value) do
          {n, ""} when n >= 0 -> http_headers(sock, rest, %{req | length: n}, counts)
          _ -> bad_request(sock, counts)
        end

      {:ok, {:http_header, _, :"Transfer-Encoding", _, _}, rest} ->
        # A chunked body is not read here: answer 404 and close.
        http_headers(sock, rest, %{req | keep: false, method: :chunked}, counts)

      {:ok, {:http_header, _, _, _, _}, rest} ->
        http_headers(sock, rest, req, counts)

      {:more, _} ->
        more(sock, buf, counts, fn b -> http_headers(sock, b, req, counts) end)

      _error_or_http_error ->
        bad_request(sock, counts)
    end
  end

  defp connection(req, value) do
    case String.downcase(value) do
      "close" -> %{req | keep: false}
      "keep-alive" -> %{req | keep: true}
      _ -> req
    end
  end

  # Drops a request body (the client sends none; another client might).
  defp skip_body(sock, buf, %{length: n} = req, counts) when byte_size(buf) >= n do
    <<_::binary-size(n), rest::binary>> = buf
    respond(sock, rest, req, counts)
  end

  defp skip_body(sock, buf, %{length: n} = req, counts) do
    case :gen_tcp.recv(sock, n - byte_size(buf)) do
      {:ok, _} -> respond(sock, <<>>, req, counts)
      {:error, _} -> counts
    end
  end

  defp respond(sock, rest, req, {ok, nf, bad}) do
    conn =
      cond do
        not req.keep -> "Connection: close\r\n"
        req.version == {1, 0} -> "Connection: keep-alive\r\n"
        true -> ""
      end

    {response, counts} =
      case {req.method, req.uri} do
        {:GET, {:abs_path, @ping <> token}} when byte_size(token) in 1..64 ->
          if token?(token),
            do: {ok_response(token, conn), {ok + 1, nf, bad}},
            else: {not_found(conn), {ok, nf + 1, bad}}

        _ ->
          {not_found(conn), {ok, nf + 1, bad}}
      end

    case :gen_tcp.send(sock, response) do
      :ok when req.keep -> http_loop(sock, rest, counts)
      _ -> counts
    end
  end

  defp ok_response(token, conn) do
    ["HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: ",
     Integer.to_string(byte_size(token)), "\r\n", conn, "\r\n", token]
  end

  defp not_found(conn),
    do: ["HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 9\r\n", conn, "\r\nNot Found"]

  defp bad_request(sock, {ok, nf, bad}) do
    :gen_tcp.send(
      sock,
      "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: 11\r\n" <>
        "Connection: close\r\n\r\nBad Request"
    )

    {ok, nf, bad + 1}
  end

  # [A-Za-z0-9_-]+
  defp token?(<<>>), do: true

  defp token?(<<c, rest::binary>>)
       when c in ?a..?z or c in ?A..?Z or c in ?0..?9 or c == ?_ or c == ?-,
       do: token?(rest)

  defp token?(_), do: false

  # Reads more of a request head; a head beyond 64 KiB is a bad request.
  defp more(sock, buf, counts, continue) do
    if byte_size(buf) > @max_head do
      bad_request(sock, counts)
    else
      case :gen_tcp.recv(sock, 0) do
        {:ok, data} -> continue.(buf <> data)
        {:error, _} -> counts
      end
    end
  end
end

defmodule Corobench.Servers.Signals do
  @moduledoc """
  Receives the VM's SIGTERM. By default the BEAM's signal server handles
  SIGTERM by calling init:stop/0; this handler replaces that default and
  tells the server's main process to run the stop sequence instead.
  """
  @behaviour :gen_event

  def install(pid) do
    :ok = :os.set_signal(:sigterm, :handle)

    :ok =
      :gen_event.swap_handler(:erl_signal_server, {:erl_signal_handler, []}, {__MODULE__, pid})
  end

  @impl true
  def init({pid, _old_handler_state}), do: {:ok, pid}

  @impl true
  def handle_event(:sigterm, pid) do
    send(pid, :stop)
    {:ok, pid}
  end

  def handle_event(_signal, pid), do: {:ok, pid}

  @impl true
  def handle_call(_request, pid), do: {:ok, :ok, pid}
end
