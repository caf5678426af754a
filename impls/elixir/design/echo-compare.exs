# Design measurement: the echo server's read loop with a passive socket (`active: false`,
# `:gen_tcp.recv/2`, what servers.ex does) against `{active, :once}` (a message per chunk, then
# `:inet.setopts(sock, active: :once)`). Same acceptors, same reply. Prints the port; after
# `total` connections have ended it prints the VM's CPU time and exits. Load it with
#   elixir design/echo-compare.exs passive|once TOTAL
#   corobench-load echo --target 127.0.0.1:PORT --connections TOTAL --concurrency 50
defmodule EchoCompare do
  @size 17
  @uuids 5

  def main([mode, total]) do
    {:ok, l} =
      :gen_tcp.listen(0, [:binary, ip: {127, 0, 0, 1}, active: false, packet: :raw,
                          nodelay: true, reuseaddr: true, backlog: 4096])
    {:ok, port} = :inet.port(l)
    IO.puts(port)
    main = self()
    mode = String.to_atom(mode)
    for _ <- 1..:erlang.system_info(:schedulers_online), do: spawn(fn -> acceptor(l, main, mode) end)
    :erlang.statistics(:runtime)
    wait(String.to_integer(total))
    {_, ms} = :erlang.statistics(:runtime)
    IO.puts("#{mode}: cpu #{ms / 1000} s")
  end

  defp wait(0), do: :ok
  defp wait(n), do: receive(do: (:closed -> wait(n - 1)))

  defp acceptor(l, main, mode) do
    {:ok, s} = :gen_tcp.accept(l)
    spawn(fn -> acceptor(l, main, mode) end)
    if mode == :once, do: :inet.setopts(s, active: :once)
    loop(mode, s, <<>>)
    :gen_tcp.close(s)
    send(main, :closed)
  end

  defp loop(mode, s, buf) when byte_size(buf) >= @size do
    <<req::binary-size(@size), rest::binary>> = buf
    :ok = :gen_tcp.send(s, [req | for(_ <- 1..@uuids, do: uuid())])
    loop(mode, s, rest)
  end

  defp loop(:passive, s, buf) do
    n = if buf == <<>>, do: 0, else: @size - byte_size(buf)
    case :gen_tcp.recv(s, n) do
      {:ok, d} -> loop(:passive, s, buf <> d)
      {:error, _} -> :ok
    end
  end

  defp loop(:once, s, buf) do
    receive do
      {:tcp, ^s, d} ->
        :inet.setopts(s, active: :once)
        loop(:once, s, buf <> d)
      {:tcp_closed, ^s} -> :ok
      {:tcp_error, ^s, _} -> :ok
    end
  end

  defp uuid do
    <<a::48, _::4, b::12, _::2, c::62>> = :crypto.strong_rand_bytes(16)
    <<p1::binary-8, p2::binary-4, p3::binary-4, p4::binary-4, p5::binary-12>> =
      Base.encode16(<<a::48, 4::4, b::12, 2::2, c::62>>, case: :lower)
    <<?\n, p1::binary, ?-, p2::binary, ?-, p3::binary, ?-, p4::binary, ?-, p5::binary>>
  end
end

EchoCompare.main(System.argv())
