// Package testmariadb runs a real MariaDB server (Debian's mariadb-server)
// on loopback for one test, with its data directory under the test's temp
// directory, and hands out empty databases on it.
//
// The package comes from hack/ci-packages.txt (bash hack/ci-deps.sh as root).
package testmariadb

import (
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/magnetite-io/magnetite/internal/testing/testproc"
)

const (
	// User and Password are the account tests connect with (over TCP).
	User     = "magnetite"
	Password = "magnetite-db-test-password"
)

// Server is a running MariaDB.
type Server struct {
	// Addr is 127.0.0.1:PORT.
	Addr string

	t     testing.TB
	dir   string
	tmp   string // its own temporary directory
	proc  *testproc.Process
	admin *sql.DB
	dbs   atomic.Int64
}

// Start runs MariaDB for the test and stops it at cleanup. Under -short it
// skips the test: the server is a real external part.
func Start(t testing.TB) *Server {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a real MariaDB server (Debian's mariadb-server package); runs in the full suite")
	}
	testproc.Require(t, "mariadb-install-db", "mariadbd")
	// Unix sockets have a short path limit, so the socket goes in a short
	// directory of its own rather than under t.TempDir.
	sockDir, err := os.MkdirTemp("", "mdb")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	s := &Server{t: t, dir: t.TempDir()}
	osUser := "root"
	if u, err := user.Current(); err == nil {
		osUser = u.Username
	}
	data := filepath.Join(s.dir, "data")
	// A temporary directory of its own: a starting mariadbd removes every
	// "#sql*" file it finds in its tmpdir as left over from a crash, so
	// servers sharing /tmp removed each other's temporary tables (one
	// test's bootstrap failed with "Unknown table
	// 'mysql.tmp_proxies_priv'" while another's server started).
	s.tmp = filepath.Join(s.dir, "tmp")
	if err := os.Mkdir(s.tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	install := exec.Command("mariadb-install-db", "--no-defaults", "--datadir="+data, "--user="+osUser,
		"--auth-root-authentication-method=normal", "--skip-test-db", "--skip-name-resolve", "--tmpdir="+s.tmp)
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("mariadb-install-db: %v\n%s", err, out)
	}
	initSQL := filepath.Join(s.dir, "init.sql")
	grant := fmt.Sprintf("CREATE USER IF NOT EXISTS '%[1]s'@'127.0.0.1' IDENTIFIED BY '%[2]s';\nGRANT ALL PRIVILEGES ON *.* TO '%[1]s'@'127.0.0.1';\n", User, Password)
	if err := os.WriteFile(initSQL, []byte(grant), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.stop)
	for attempt := 1; ; attempt++ {
		err := s.start(data, initSQL, filepath.Join(sockDir, "sock"), osUser)
		if err == nil {
			break
		}
		if attempt == 3 || !strings.Contains(err.Error(), "Address already in use") {
			t.Fatal(err)
		}
	}
	return s
}

func (s *Server) start(data, initSQL, sock, osUser string) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	logPath := filepath.Join(s.dir, "mariadb.log")
	cmd := exec.Command("mariadbd", "--no-defaults", "--datadir="+data, "--tmpdir="+s.tmp, "--socket="+sock,
		"--port="+strconv.Itoa(port), "--bind-address=127.0.0.1", "--user="+osUser, "--skip-name-resolve",
		"--init-file="+initSQL, "--pid-file="+filepath.Join(s.dir, "mariadb.pid"), "--log-error="+logPath,
		// Small and fast: the data is thrown away after the test.
		"--innodb-buffer-pool-size=64M", "--innodb-log-file-size=16M", "--innodb-flush-log-at-trx-commit=2",
		"--skip-log-bin", "--max-connections=500")
	proc, err := testproc.Start(cmd, "")
	if err != nil {
		return fmt.Errorf("start mariadbd: %w", err)
	}
	exited := proc.Exited()
	s.proc = proc
	s.Addr = fmt.Sprintf("127.0.0.1:%d", port)

	deadline := time.Now().Add(time.Minute)
	for {
		select {
		case <-exited:
			out, _ := os.ReadFile(logPath)
			return fmt.Errorf("mariadbd exited during start:\n%s", out)
		default:
		}
		db, err := s.open("")
		if err == nil {
			if err = db.Ping(); err == nil {
				s.admin = db
				return nil
			}
			db.Close()
		}
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(logPath)
			return fmt.Errorf("mariadb did not accept connections on %s within a minute: %v\n%s", s.Addr, err, out)
		}
		select {
		case <-exited:
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (s *Server) open(db string) (*sql.DB, error) {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.Addr, cfg.DBName = User, Password, "tcp", s.Addr, db
	cfg.Timeout = 5 * time.Second
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(conn), nil
}

func (s *Server) stop() {
	if s.admin != nil {
		s.admin.Close()
	}
	if s.proc != nil {
		s.proc.Stop(30 * time.Second)
	}
}

// NewDatabase creates an empty database and returns its URL in the form
// [database] connection takes: mysql://user:password@127.0.0.1:PORT/name.
func (s *Server) NewDatabase() string {
	s.t.Helper()
	name := fmt.Sprintf("magnetite_%d", s.dbs.Add(1))
	if _, err := s.admin.Exec("CREATE DATABASE " + name + " CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
		s.t.Fatalf("create database %s: %v", name, err)
	}
	return fmt.Sprintf("mysql://%s:%s@%s/%s", User, Password, s.Addr, name)
}
