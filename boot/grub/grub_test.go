package grub

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// grubWords splits line as GRUB's command parser does (GRUB manual,
// "Shell-like scripting": quoting and variable expansion), with every
// variable expanding to "<var>": outside quotes a backslash escapes the
// next byte and $name or ${name} expands, inside single quotes nothing
// is special, inside double quotes $ expands and a backslash escapes
// $, ", \ and newline. A model, written from the manual, to check the
// configuration against; not GRUB's code.
func grubWords(line string) []string {
	var words []string
	var cur strings.Builder
	inWord := false
	expand := func(i int) int { // at '$': returns the index after the name
		j := i + 1
		if j < len(line) && line[j] == '{' {
			for j < len(line) && line[j] != '}' {
				j++
			}
			cur.WriteString("<var>")
			return j + 1
		}
		for j < len(line) && (line[j] == '_' || line[j] >= 'a' && line[j] <= 'z' || line[j] >= 'A' && line[j] <= 'Z' || line[j] >= '0' && line[j] <= '9' || line[j] == '?' || line[j] == '#' || line[j] == '@' || line[j] == '*') {
			j++
		}
		if j == i+1 {
			cur.WriteByte('$')
		} else {
			cur.WriteString("<var>")
		}
		return j
	}
	for i := 0; i < len(line); {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
			i++
		case c == '\\' && i+1 < len(line):
			cur.WriteByte(line[i+1])
			inWord = true
			i += 2
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				j = len(line) - i - 1
			}
			cur.WriteString(line[i+1 : i+1+j])
			inWord = true
			i += j + 2
		case c == '"':
			inWord = true
			i++
			for i < len(line) && line[i] != '"' {
				switch {
				case line[i] == '\\' && i+1 < len(line) && strings.IndexByte("$\"\\\n", line[i+1]) >= 0:
					cur.WriteByte(line[i+1])
					i += 2
				case line[i] == '$':
					i = expand(i)
				default:
					cur.WriteByte(line[i])
					i++
				}
			}
			i++
		case c == '$':
			inWord = true
			i = expand(i)
		case c == ';' || c == '#' && !inWord:
			// A command separator or a comment: nothing after it is an argument.
			if inWord {
				words = append(words, cur.String())
			}
			return append(words, "<end>")
		default:
			cur.WriteByte(c)
			inWord = true
			i++
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// hostile are words GRUB's parser would expand, split or end a command
// at if they reached it unquoted.
var hostile = []string{"ether9.token=$prefix", "x=${root}", "a;reboot", "#comment", "{b}", "c|d&e", "<f>", "$", "g=`h`", "i=$(j)"}

// TestConfigQuoting: every word of a hostile command line reaches the
// shim as it was: GRUB's parser (the model above) gives back exactly the
// words, in order, after the shim's path.
func TestConfigQuoting(t *testing.T) {
	cmdline := "console=ttyS0 panic=-1  quiet " + strings.Join(hostile, " ")
	cfg, err := Config(cmdline)
	if err != nil {
		t.Fatal(err)
	}
	var line string
	for _, l := range strings.Split(cfg, "\n") {
		if strings.HasPrefix(l, "multiboot2 ") {
			line = l
		}
	}
	if line == "" {
		t.Fatalf("no multiboot2 line in\n%s", cfg)
	}
	got := grubWords(line)
	want := append([]string{"multiboot2", ShimPath}, strings.Fields(cmdline)...)
	if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
		t.Fatalf("GRUB parses %q as\n  %q\nwant\n  %q", line, got, want)
	}
	for _, w := range []string{"module2 " + InitPath + "\n", "\nboot\n", "serial --unit=0 --speed=115200", "terminal_output serial\n"} {
		if !strings.Contains(cfg, w) {
			t.Errorf("configuration lacks %q:\n%s", w, cfg)
		}
	}
	entry, err := Menuentry("/ether9", cmdline)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(entry, line[len("multiboot2 "+ShimPath):]) || !strings.Contains(entry, "multiboot2 /ether9/shim.elf ") || !strings.Contains(entry, "module2 /ether9/init\n") {
		t.Errorf("menu entry does not boot /ether9's files with the same words:\n%s", entry)
	}
}

// TestArgsRefused: what GRUB would change or cut on the way is refused
// with the word named, never passed on altered.
func TestArgsRefused(t *testing.T) {
	for _, w := range []string{`a'b`, `a"b`, `a\b`, "a\nreboot", "a\tb", "a\x7fb", "caf\xc3\xa9"} {
		_, err := Args("console=ttyS0 " + w)
		if !errors.Is(err, ErrWord) {
			t.Errorf("word %q: err = %v, want ErrWord", w, err)
		}
	}
	if _, err := Args(strings.Repeat("x", MaxCmdline+1)); err == nil {
		t.Errorf("a command line longer than the shim keeps was accepted")
	}
	if _, err := Menuentry("ether9", "a"); err == nil {
		t.Errorf("a relative directory was accepted")
	}
}

// needGRUB skips a test when GRUB's tools are missing, except under
// CI=true, where tools/test installed them.
func needGRUB(t *testing.T, what string) {
	t.Helper()
	_, err := exec.LookPath(what)
	if err == nil {
		_, err = os.Stat(filepath.Join(ModuleDir, "multiboot2.mod"))
	}
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true and %v (tools/lib/install.sh installs grub-efi-amd64-bin)", err)
	}
	t.Skipf("skipping: %v", err)
}

// TestScriptCheck: GRUB's own parser (grub-script-check) reads the
// configuration and the menu entry of a hostile command line.
func TestScriptCheck(t *testing.T) {
	needGRUB(t, "grub-script-check")
	cmdline := strings.Join(hostile, " ")
	cfg, err := Config(cmdline)
	if err != nil {
		t.Fatal(err)
	}
	entry, err := Menuentry("/ether9", cmdline)
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"built-in": cfg, "menu entry": entry} {
		cmd := exec.Command("grub-script-check")
		cmd.Stdin = strings.NewReader(text)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("grub-script-check on the %s configuration: %v\n%s\n%s", name, err, out, text)
		}
	}
}

// TestBuild: grub-mkimage makes a PE image carrying the configuration,
// the same one twice.
func TestBuild(t *testing.T) {
	needGRUB(t, Mkimage)
	cfg, err := Config("console=ttyS0 ether9.test=$x")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a, err := Build(ctx, ModuleDir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(a, []byte(cfg)) {
		t.Errorf("the boot program does not carry the configuration")
	}
	b, err := Build(ctx, ModuleDir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Errorf("two builds of one configuration differ")
	}
	t.Logf("boot program: %d bytes", len(a))
	if _, err := Build(ctx, t.TempDir(), cfg); !errors.Is(err, ErrNoGRUB) {
		t.Errorf("no modules: err = %v, want ErrNoGRUB", err)
	}
}
