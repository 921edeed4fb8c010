// Package web serves the browser view of a running hop: one page, its
// embedded assets, a stream of samples (server-sent events) taken from
// the hop's snapshots, downloads of the recent samples, and the link
// edits of `set` behind buttons.
//
// The server reads snapshots and never touches an owner's state: a
// sampler goroutine asks the source for a snapshot a few times a second,
// turns it into a small sample, keeps the last minutes in a bounded ring
// and hands each sample to the open streams without waiting for any of
// them (a slow browser misses samples, it never holds up the sampler).
//
// Security: a loopback address needs no token; any other address needs
// one (Options.Token, or a generated one) on every request, as the
// X-Pi2hop-Token header or the token query parameter. Requests that
// change the link are POST, carry the token when there is one, and come
// from the page's own origin (Origin matches Host). On loopback the Host
// must be a loopback name too, so a rebinding DNS name cannot read the
// page. Nothing but the embedded assets is served.
package web

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/instance"
	"github.com/pi2hop/pi2hop/internal/connlimit"
	"github.com/pi2hop/pi2hop/lan"
)

//go:embed assets
var assets embed.FS

// DefaultAddr is where --web listens when given without a value.
const DefaultAddr = "127.0.0.1:8080"

// TokenHeader carries the token on requests that do not put it in the URL.
const TokenHeader = "X-Pi2hop-Token"

// Source is what the view shows and edits: a running hop.
type Source interface {
	// Stats returns the hop's current snapshot; false while there is no
	// hop (a lab between runs).
	Stats() (hop.Snapshot, bool)
	// Clients are a shared LAN's devices; nil elsewhere.
	Clients() ([]lan.Client, error)
	// Set applies an edit as `set` does.
	Set(instance.Settings) ([]string, error)
}

// FlowSource is a Source that lists flows itself (a synthetic source in
// tests). Other sources' flows come from their snapshots (snapshotFlows).
type FlowSource interface {
	Flows(*hop.Snapshot) []Flow
}

// Live adapts a running instance to a Source.
func Live(l instance.Live) Source { return liveSource{l} }

type liveSource struct{ l instance.Live }

func (s liveSource) Stats() (hop.Snapshot, bool)               { return s.l.Stats(), true }
func (s liveSource) Clients() ([]lan.Client, error)            { return s.l.Clients() }
func (s liveSource) Set(e instance.Settings) ([]string, error) { return s.l.Set(e) }
func (s liveSource) Conns() *connlimit.Counters                { return s.l.WebConns() }
func (s liveSource) Log() *slog.Logger                         { return s.l.Log() }

// hosted is a Source that keeps the view's connection counters and log
// (a running instance: its stats and metrics show them). Other views
// count for themselves and log to slog's default.
type hosted interface {
	Conns() *connlimit.Counters
	Log() *slog.Logger
}

// maxFlows is the most flows a table event carries per direction: the
// hop's table size.
const maxFlows = 4096

// Flows are both directions' flow tables, as `stats --flows` reads them.
func (s liveSource) Flows(*hop.Snapshot) []Flow {
	_, tables := s.l.StatsFlows(maxFlows)
	return flowRows(tables)
}

// Options configure a Server.
type Options struct {
	Addr  string // host:port; "" is DefaultAddr, a bare :port binds to loopback
	Token string // required on every request when set; generated when Addr is not loopback
	// Every is the sampling interval (default 200ms: five updates a second).
	Every time.Duration
	// Keep is how much history the downloads hold (default 5 minutes).
	Keep time.Duration
}

// Server is a running view.
type Server struct {
	src      Source
	token    string
	loopback bool
	every    time.Duration
	ln       net.Listener
	srv      *http.Server
	conns    *connlimit.Counters
	log      *connlimit.Limited
	ring     *ring

	mu   sync.Mutex
	subs map[chan []byte]struct{}
	last []byte // the latest flows event, for new streams

	stop chan struct{}
	done chan struct{}
}

// ListenAddr resolves --web's value: "" is DefaultAddr, a bare ":port"
// binds to loopback (exposing the view must be asked for with a host).
func ListenAddr(addr string) (string, error) {
	if addr == "" {
		return DefaultAddr, nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("want host:port or :port, e.g. %s (%v)", DefaultAddr, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// IsLoopback reports whether host (a name or an address) is this box only.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// NewToken returns a random token for a view served beyond loopback.
func NewToken() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// New checks opt and returns a server that serves nothing yet (Handler
// works; Start listens).
func New(opt Options, src Source) (*Server, error) {
	addr, err := ListenAddr(opt.Addr)
	if err != nil {
		return nil, err
	}
	host, _, _ := net.SplitHostPort(addr)
	s := &Server{src: src, token: opt.Token, loopback: IsLoopback(host), every: opt.Every,
		subs: map[chan []byte]struct{}{}, stop: make(chan struct{}), done: make(chan struct{})}
	if !s.loopback && s.token == "" {
		s.token = NewToken()
	}
	if s.every <= 0 {
		s.every = 200 * time.Millisecond
	}
	keep := opt.Keep
	if keep <= 0 {
		keep = 5 * time.Minute
	}
	s.ring = newRing(int(keep / s.every))
	lg, conns := slog.Default(), new(connlimit.Counters)
	if h, ok := src.(hosted); ok {
		lg, conns = h.Log(), h.Conns()
	}
	// The server's complaints (broken clients, failed accepts) go to the
	// instance's log, rate-limited, not as net/http's bare lines on the
	// standard error a user's command shares.
	s.conns, s.log = conns, connlimit.NewLimited(lg, connlimit.LogEvery)
	s.srv = &http.Server{Addr: addr, Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute,
		ErrorLog: connlimit.ErrorLog(s.log, "web")}
	return s, nil
}

// Serve starts a view of src on opt.Addr: it listens, samples and serves
// until Close.
func Serve(opt Options, src Source) (*Server, error) {
	s, err := New(opt, src)
	if err != nil {
		return nil, err
	}
	if err := s.Start(); err != nil {
		return nil, err
	}
	return s, nil
}

// Start listens and starts sampling.
func (s *Server) Start() error {
	ln, err := net.Listen("tcp", s.srv.Addr)
	if err != nil {
		return fmt.Errorf("web: %w", err)
	}
	s.ln = connlimit.Listen(ln, "web", instance.MaxWebConns, s.conns, s.log)
	go s.srv.Serve(s.ln)
	go s.sample()
	return nil
}

// URL is the page's address, with the token when there is one: what a
// person opens. A server listening on every address (0.0.0.0 or ::) is
// named by one of this box's own, since a wildcard is no address to open.
func (s *Server) URL() string {
	addr := s.srv.Addr
	if s.ln != nil {
		addr = s.ln.Addr().String()
	}
	if ap, err := netip.ParseAddrPort(addr); err == nil && ap.Addr().IsUnspecified() {
		addr = netip.AddrPortFrom(boxAddr(), ap.Port()).String()
	}
	u := "http://" + addr + "/"
	if s.token != "" {
		u += "?token=" + url.QueryEscape(s.token)
	}
	return u
}

// Token is the token requests must carry ("" on loopback without one).
func (s *Server) Token() string { return s.token }

// Close stops the sampler and the listener; open streams end.
func (s *Server) Close() error {
	select {
	case <-s.stop:
		return nil
	default:
	}
	close(s.stop)
	if s.ln != nil {
		<-s.done
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = s.srv.Close() // streams never finish by themselves
	}
	return err
}

// Handler is the view's HTTP handler: every rule of the package comment.
func (s *Server) Handler() http.Handler {
	static, _ := fs.Sub(assets, "assets")
	files := http.FileServer(http.FS(static))
	mux := http.NewServeMux()
	page := s.page(static)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.Write(page)
	})
	mux.Handle("GET /assets/", http.StripPrefix("/assets", files))
	mux.HandleFunc("GET /events", s.events)
	mux.HandleFunc("GET /download.json", s.downloadJSON)
	mux.HandleFunc("GET /download.csv", s.downloadCSV)
	mux.HandleFunc("POST /set", s.set)
	return s.guard(mux)
}

// page is index.html as served: with a token, the page's own links to
// its scripts and styles carry it, since the browser fetches them
// without the page's query and a request without the token is refused.
func (s *Server) page(static fs.FS) []byte {
	b, err := fs.ReadFile(static, "index.html")
	if err != nil {
		panic(err) // embedded at build time
	}
	if s.token == "" {
		return b
	}
	q := "?token=" + url.QueryEscape(s.token)
	re := regexp.MustCompile(`((?:href|src)="assets/[^"?]*)"`)
	return re.ReplaceAll(b, []byte(`$1`+q+`"`))
}

// guard refuses, before any handler runs, what the security rules
// refuse.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("X-Frame-Options", "DENY")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'")
		host, _, err := net.SplitHostPort(r.Host)
		if err != nil {
			host = r.Host
		}
		if s.loopback && !IsLoopback(host) {
			http.Error(w, "this view answers to a loopback address only", http.StatusForbidden)
			return
		}
		if s.token != "" {
			got := r.Header.Get(TokenHeader)
			if got == "" {
				got = r.URL.Query().Get("token")
			}
			if subtle.ConstantTimeCompare([]byte(got), []byte(s.token)) != 1 {
				http.Error(w, "token missing or wrong: open the address pi2hop printed (with ?token=)", http.StatusUnauthorized)
				return
			}
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			o := r.Header.Get("Origin")
			u, err := url.Parse(o)
			if o == "" || err != nil || u.Host != r.Host {
				http.Error(w, "cross-origin request refused: changes come from the page itself", http.StatusForbidden)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// Edit is the body of POST /set: setting keys (instance's table, as
// `set` and the flags name them) to values in the forms the flags take,
// such as {"rate": "5mbit", "delay": "20ms"}.
type Edit map[string]string

// Settings turns e into the typed edit `set` sends, or an error naming
// the key and the accepted form. Each value is read and bounded by its
// setting's flag, so the page accepts what `set` accepts.
func (e Edit) Settings() (instance.Settings, error) {
	var out instance.Settings
	var errs []error
	for _, key := range slices.Sorted(maps.Keys(e)) {
		st, ok := instance.Lookup(key)
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("%q: not a setting (rate, delay, up-rate, ...)", key))
		case st.Fixed:
			errs = append(errs, fmt.Errorf("%s: cannot change while the hop runs", key))
		default:
			if err := st.Bind(&out).Set(e[key]); err != nil {
				errs = append(errs, fmt.Errorf("%s %q: %v", key, e[key], err))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return out, err
	}
	return out, out.Check()
}

// setReply answers POST /set.
type setReply struct {
	Error    string   `json:"error,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

func (s *Server) set(w http.ResponseWriter, r *http.Request) {
	var e Edit
	dec := json.NewDecoder(io.LimitReader(r.Body, 4<<10))
	reply := func(code int, rep setReply) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(rep)
	}
	if err := dec.Decode(&e); err != nil {
		reply(http.StatusBadRequest, setReply{Error: "bad request: " + err.Error()})
		return
	}
	st, err := e.Settings()
	if err != nil {
		reply(http.StatusBadRequest, setReply{Error: err.Error()})
		return
	}
	if len(st.Given()) == 0 {
		reply(http.StatusBadRequest, setReply{Error: "no setting given (rate, delay, up-rate, ...)"})
		return
	}
	warnings, err := s.src.Set(st)
	if err != nil {
		reply(http.StatusConflict, setReply{Error: err.Error(), Warnings: warnings})
		return
	}
	reply(http.StatusOK, setReply{Warnings: warnings})
}

// Following is a Source whose hop changes: the lab's runs, one after the
// other. Put it the current hop, or nil between runs. The lab's runs set
// their own links, so it refuses edits.
type Following struct {
	mu sync.Mutex
	h  *hop.Hop
}

// Put makes h the hop the view shows (nil: none).
func (f *Following) Put(h *hop.Hop) {
	f.mu.Lock()
	f.h = h
	f.mu.Unlock()
}

func (f *Following) Stats() (hop.Snapshot, bool) {
	f.mu.Lock()
	h := f.h
	f.mu.Unlock()
	if h == nil {
		return hop.Snapshot{}, false
	}
	return h.Stats(), true
}

func (f *Following) Clients() ([]lan.Client, error) { return nil, nil }

func (f *Following) Set(instance.Settings) ([]string, error) {
	return nil, errors.New("the lab's runs set their own links: change the scenario's flags instead")
}

// boxAddr is an address others can reach this box on: its first global
// unicast IPv4 address, else IPv6, else loopback.
func boxAddr() netip.Addr {
	addrs, _ := net.InterfaceAddrs()
	var v6 netip.Addr
	for _, a := range addrs {
		p, err := netip.ParsePrefix(a.String())
		if err != nil || !p.Addr().IsGlobalUnicast() {
			continue
		}
		if p.Addr().Is4() {
			return p.Addr()
		}
		if !v6.IsValid() {
			v6 = p.Addr()
		}
	}
	if v6.IsValid() {
		return v6
	}
	return netip.AddrFrom4([4]byte{127, 0, 0, 1})
}
