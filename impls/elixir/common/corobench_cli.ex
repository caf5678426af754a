defmodule Corobench.CLI do
  @moduledoc """
  Shared helper of the Elixir implementations: command-line parsing and
  validation (docs/protocol.md section 2), the exit codes of section 3 and the
  one-line JSON result (written by hand: no dependencies).
  """

  @max_int 9_223_372_036_854_775_807

  @chain_flags [
    {"w", "workers", :positive},
    {"e", "events", :positive},
    {"q", "queue", :positive},
    {"t", "etype", :etype},
    {"s", "esize", :positive},
    {nil, "threads", :positive},
    {nil, "warmup", :non_negative},
    {nil, "cpuprofile", :text}
  ]
  @tasks_flags [
    {"n", "tasks", :positive},
    {"d", "sleep-ms", :non_negative},
    {nil, "threads", :positive}
  ]
  @server_flags [
    {nil, "host", :host},
    {nil, "port", {:range, 0, 65535}},
    {nil, "threads", :positive},
    {nil, "variant", :variant},
    {nil, "allow-remote", :switch}
  ]
  @echo_flags @server_flags ++
                [
                  {nil, "size", {:range, 1, 1_048_576}},
                  {nil, "uuids", {:range, 0, 1000}},
                  # replies after which the server closes a connection; 0: until the client does
                  {nil, "per-connection", {:range, 0, 1_000_000_000}}
                ]
  @blocking_flags [
    {"n", "tasks", :positive},
    {"i", "iterations", :positive},
    {"b", "bytes", :positive},
    {nil, "variant", :variant},
    {nil, "threads", :positive}
  ]

  @doc "Exit 2: bad input. One line on stderr, nothing on stdout."
  @spec bad_input(String.t()) :: no_return()
  def bad_input(msg), do: die(2, msg)

  @doc "Exit 3: the machine refused a resource."
  @spec refused(String.t()) :: no_return()
  def refused(msg), do: die(3, msg)

  @spec die(non_neg_integer(), String.t()) :: no_return()
  def die(code, msg) do
    IO.puts(:stderr, msg)
    System.halt(code)
  end

  @doc """
  Parses `argv` (scenario first). `id` is the manifest id, `variants` the
  blocking variants (the first is the default; the servers have none).
  Returns a map with the scenario atom and every parameter; `:threads` is nil
  when not given, `:variant_given` says whether `--variant` was.
  """
  def parse(argv, id, variants) do
    {scenario, rest} =
      case argv do
        [] -> bad_input("missing scenario (chain, tasks, blocking, echo or http)")
        [s | rest] -> {s, rest}
      end

    variants = if scenario == "blocking", do: variants, else: []

    {flags, defaults} =
      case scenario do
        "chain" ->
          {@chain_flags,
           %{
             scenario: :chain,
             workers: 1000,
             events: 10000,
             queue: 256,
             etype: :int,
             esize: 10,
             warmup: 0,
             cpuprofile: nil
           }}

        "tasks" ->
          {@tasks_flags, %{scenario: :tasks, tasks: 10000, sleep_ms: 10000}}

        "blocking" ->
          {@blocking_flags,
           %{scenario: :blocking, tasks: 1000, iterations: 1000, bytes: 10, variant: hd(variants)}}

        "echo" ->
          {@echo_flags, Map.merge(server_defaults(:echo), %{size: 17, uuids: 5, per_connection: 0})}

        "http" ->
          {@server_flags, server_defaults(:http)}

        other ->
          bad_input("unknown scenario '#{other}' (chain, tasks, blocking, echo or http)")
      end

    defaults = defaults |> Map.put(:threads, nil) |> Map.put(:variant_given, false)
    p = parse_flags(rest, scenario, flags, variants, MapSet.new(), defaults)

    if Map.get(p, :cpuprofile) != nil, do: bad_input("--cpuprofile is not supported by #{id}")

    case p.scenario do
      :chain ->
        if p.workers * p.events * p.esize > @max_int,
          do: bad_input("expected checksum workers*events*esize exceeds 2^63-1")

      :blocking ->
        if p.tasks * p.iterations * p.bytes > @max_int,
          do: bad_input("expected checksum tasks*iterations*bytes exceeds 2^63-1")

      :tasks ->
        :ok

      _server ->
        if not p.allow_remote and not loopback?(p.ip),
          do:
            bad_input(
              "--host #{p.host}: not a loopback address (give --allow-remote to serve other addresses)"
            )
    end

    p
  end

  defp server_defaults(scenario),
    do: %{scenario: scenario, host: "127.0.0.1", ip: {127, 0, 0, 1}, port: 0, allow_remote: false, variant: nil}

  defp loopback?({127, _, _, _}), do: true
  defp loopback?({0, 0, 0, 0, 0, 0, 0, 1}), do: true
  defp loopback?(_), do: false

  defp parse_flags([], _scen, _flags, _variants, _seen, acc), do: acc

  defp parse_flags([arg | rest], scen, flags, variants, seen, acc) do
    {flag, inline} = find_flag(arg, flags)

    if flag == nil do
      if String.starts_with?(arg, "-"),
        do: bad_input("unknown flag '#{arg}' for #{scen}"),
        else: bad_input("unexpected argument '#{arg}'")
    end

    {_short, long, kind} = flag
    if MapSet.member?(seen, long), do: bad_input("flag --#{long} given more than once")

    {value, rest} =
      case {kind, inline, rest} do
        {:switch, nil, r} -> {true, r}
        {:switch, _, _} -> bad_input("flag --#{long} takes no value")
        {_, nil, [v | r]} -> {v, r}
        {_, nil, []} -> bad_input("flag #{arg} needs a value")
        {_, v, r} -> {v, r}
      end

    key = long |> String.replace("-", "_") |> String.to_atom()
    acc = Map.put(acc, key, convert(kind, "--" <> long, value, variants))

    acc =
      case kind do
        :variant -> Map.put(acc, :variant_given, true)
        :host -> Map.put(acc, :ip, parse_ip(value))
        _ -> acc
      end

    parse_flags(rest, scen, flags, variants, MapSet.put(seen, long), acc)
  end

  defp find_flag("--" <> name, flags) do
    {name, inline} =
      case String.split(name, "=", parts: 2) do
        [n, v] -> {n, v}
        [n] -> {n, nil}
      end

    {Enum.find(flags, fn {_, l, _} -> l == name end), inline}
  end

  defp find_flag("-" <> s, flags) when byte_size(s) == 1,
    do: {Enum.find(flags, fn {sh, _, _} -> sh == s end), nil}

  defp find_flag(_arg, _flags), do: {nil, nil}

  defp convert(kind, flag, value, _variants) when kind in [:positive, :non_negative] do
    n =
      case Integer.parse(value) do
        {n, ""} when value != "" -> n
        _ -> bad_input("#{flag} needs an integer, got '#{value}'")
      end

    cond do
      n > @max_int -> bad_input("#{flag} value '#{value}' is out of range")
      n < 0 and kind == :non_negative -> bad_input("#{flag} must not be negative, got #{value}")
      n <= 0 and kind == :positive -> bad_input("#{flag} must be positive, got #{value}")
      true -> n
    end
  end

  defp convert({:range, min, max}, flag, value, _variants) do
    n = convert(:non_negative, flag, value, [])

    if n < min or n > max,
      do: bad_input("#{flag} must be in #{min} .. #{max}, got #{value}"),
      else: n
  end

  defp convert(:switch, _flag, value, _variants), do: value

  defp convert(:host, flag, value, _variants) do
    if parse_ip(value) == nil,
      do: bad_input("#{flag}: not an IP address literal: '#{value}'"),
      else: value
  end

  defp convert(:etype, _flag, value, _variants) do
    case value do
      v when v in ["0", "int"] -> :int
      v when v in ["1", "str"] -> :str
      v when v in ["2", "str_ptr"] -> :str_ptr
      v when v in ["3", "str_clone"] -> :str_clone
      _ -> bad_input("unknown etype '#{value}' (0/int, 1/str, 2/str_ptr, 3/str_clone)")
    end
  end

  defp convert(:variant, _flag, value, []),
    do: bad_input("--variant: this implementation has no variants of this scenario (got '#{value}')")

  defp convert(:variant, _flag, value, variants) do
    if value in variants,
      do: value,
      else: bad_input("unknown variant '#{value}' (#{Enum.join(variants, ", ")})")
  end

  defp convert(:text, _flag, value, _variants), do: value

  # An IPv4 or IPv6 address literal (no names), as a tuple; nil otherwise.
  defp parse_ip(text) do
    case :inet.parse_strict_address(String.to_charlist(text)) do
      {:ok, ip} -> ip
      {:error, _} -> nil
    end
  end

  @doc "Prints the one JSON line; `pairs` is a keyword list of integers, atoms and strings."
  def print_json(pairs) do
    body =
      pairs
      |> Enum.map(fn {k, v} -> [?", Atom.to_string(k), ?", ?:, json_value(v)] end)
      |> Enum.intersperse(?,)

    IO.write([?{, body, ?}, ?\n])
  end

  defp json_value(v) when is_integer(v), do: Integer.to_string(v)
  defp json_value(v) when is_boolean(v), do: Atom.to_string(v)
  defp json_value(v) when is_atom(v), do: json_value(Atom.to_string(v))

  defp json_value(v) when is_binary(v),
    do: [?", String.replace(v, ["\\", "\""], fn c -> "\\" <> c end), ?"]
end
