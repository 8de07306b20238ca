// Command bubbletea is a test app built with Bubble Tea (seed 004 names it
// among the frameworks to support): a list of four choices on the
// alternate screen, a ">" cursor moved by the arrow keys, Enter prints
// "chose: <choice>" after leaving the alternate screen and exits 0.
//
// It is its own Go module, so termhost's go.mod does not carry Bubble
// Tea's dependencies.
package main

import (
	"fmt"
	"os"

	tea "github.com/charmbracelet/bubbletea"
)

var choices = []string{"apple", "banana", "cherry", "date"}

type model struct {
	cursor int
	chosen string
}

func (m model) Init() tea.Cmd { return nil }

func (m model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if k, ok := msg.(tea.KeyMsg); ok {
		switch k.String() {
		case "up", "k":
			m.cursor = max(m.cursor-1, 0)
		case "down", "j":
			m.cursor = min(m.cursor+1, len(choices)-1)
		case "enter":
			m.chosen = choices[m.cursor]
			return m, tea.Quit
		case "q", "ctrl+c":
			return m, tea.Quit
		}
	}
	return m, nil
}

func (m model) View() string {
	s := "Pick a fruit:\n\n"
	for i, c := range choices {
		mark := " "
		if i == m.cursor {
			mark = ">"
		}
		s += fmt.Sprintf("%s %s\n", mark, c)
	}
	return s + "\n(enter to choose, q to quit)\n"
}

func main() {
	m, err := tea.NewProgram(model{}, tea.WithAltScreen()).Run()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if c := m.(model).chosen; c != "" {
		fmt.Println("chose: " + c)
	}
}
