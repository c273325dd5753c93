package acp

import (
	"context"
	"fmt"
	"strings"

	sdk "github.com/coder/acp-go-sdk"
)

// Session settings the editor shows and changes (ACP's config options):
// configOptions in session/new, load and resume, session/set_config_option,
// config_option_update; the approval policy is also offered as session
// modes for clients that read only modes (session/set_mode,
// current_mode_update).

// ConfigOption is one session setting: a boolean (Bool set) or a choice
// among Choices (Value set).
type ConfigOption struct {
	ID, Name, Description string
	// Category is ACP's semantic category ("mode", "model", ...); "" for
	// none.
	Category string
	Bool     *bool
	Value    string
	Choices  []Choice
}

// Choice is one value of a select option.
type Choice struct {
	Value, Name, Description string
}

// Config option ids.
const (
	OptionAutoCompaction = "auto_compaction"
	OptionApproval       = "approval"
	OptionModel          = "model"
	OptionSummaryModel   = "summary_model"
)

// Configurable is a Session with settings; a Session without them offers
// none.
type Configurable interface {
	// ConfigOptions are the session's settings and their current values.
	ConfigOptions() []ConfigOption
	// SetConfigOption changes one (value is a bool or a string); the change
	// applies from the next turn.
	SetConfigOption(ctx context.Context, id string, value any) error
}

// sdkOptions are opts on the wire: a boolean as a toggle when the client
// offered boolean options, else as an on/off select.
func sdkOptions(opts []ConfigOption, boolean bool) []sdk.SessionConfigOption {
	out := []sdk.SessionConfigOption{}
	for _, o := range opts {
		var desc *string
		if o.Description != "" {
			desc = sdk.Ptr(o.Description)
		}
		var cat *sdk.SessionConfigOptionCategory
		if o.Category != "" {
			cat = sdk.Ptr(sdk.SessionConfigOptionCategory(o.Category))
		}
		if o.Bool != nil && boolean {
			out = append(out, sdk.SessionConfigOption{Boolean: &sdk.SessionConfigOptionBoolean{Id: sdk.SessionConfigId(o.ID),
				Name: o.Name, Description: desc, Category: cat, CurrentValue: *o.Bool, Type: "boolean"}})
			continue
		}
		choices, value := o.Choices, o.Value
		if o.Bool != nil {
			choices = []Choice{{Value: "on", Name: "On"}, {Value: "off", Name: "Off"}}
			value = map[bool]string{true: "on", false: "off"}[*o.Bool]
		}
		var list sdk.SessionConfigSelectOptionsUngrouped
		for _, c := range choices {
			sc := sdk.SessionConfigSelectOption{Value: sdk.SessionConfigValueId(c.Value), Name: c.Name}
			if c.Description != "" {
				sc.Description = sdk.Ptr(c.Description)
			}
			list = append(list, sc)
		}
		out = append(out, sdk.SessionConfigOption{Select: &sdk.SessionConfigOptionSelect{Id: sdk.SessionConfigId(o.ID), Name: o.Name,
			Description: desc, Category: cat, CurrentValue: sdk.SessionConfigValueId(value),
			Options: sdk.SessionConfigSelectOptions{Ungrouped: &list}, Type: "select"}})
	}
	return out
}

// modes mirrors the approval option as session modes.
func modes(opts []ConfigOption) *sdk.SessionModeState {
	for _, o := range opts {
		if o.ID != OptionApproval {
			continue
		}
		m := &sdk.SessionModeState{CurrentModeId: sdk.SessionModeId(o.Value)}
		for _, c := range o.Choices {
			sm := sdk.SessionMode{Id: sdk.SessionModeId(c.Value), Name: c.Name}
			if c.Description != "" {
				sm.Description = sdk.Ptr(c.Description)
			}
			m.AvailableModes = append(m.AvailableModes, sm)
		}
		return m
	}
	return nil
}

// settings are a session's options and modes for a session/new, load or
// resume answer.
func (s *Server) settings(ss Session) ([]sdk.SessionConfigOption, *sdk.SessionModeState) {
	c, ok := ss.(Configurable)
	if !ok {
		return nil, nil
	}
	opts := c.ConfigOptions()
	return sdkOptions(opts, s.caps.Load().BooleanConfigOptions), modes(opts)
}

// optionValue reads a set_config_option value for option o: a boolean, or
// a select's value (an on/off select stands for a boolean).
func optionValue(o ConfigOption, p sdk.SetSessionConfigOptionRequest) (any, error) {
	switch {
	case p.Boolean != nil:
		if o.Bool == nil {
			return nil, fmt.Errorf("%s is not a boolean option", o.ID)
		}
		return p.Boolean.Value, nil
	case p.ValueId != nil:
		v := string(p.ValueId.Value)
		if o.Bool != nil {
			switch v {
			case "on":
				return true, nil
			case "off":
				return false, nil
			}
			return nil, fmt.Errorf("%s is on or off, not %q", o.ID, v)
		}
		values := make([]string, 0, len(o.Choices))
		for _, c := range o.Choices {
			if c.Value == v {
				return v, nil
			}
			values = append(values, c.Value)
		}
		return nil, fmt.Errorf("%q is not a value of %s; choose one of: %s", v, o.ID, strings.Join(values, ", "))
	}
	return nil, fmt.Errorf("no value")
}

func (s *Server) SetSessionConfigOption(ctx context.Context, p sdk.SetSessionConfigOptionRequest) (sdk.SetSessionConfigOptionResponse, error) {
	var sid sdk.SessionId
	var id sdk.SessionConfigId
	switch {
	case p.Boolean != nil:
		sid, id = p.Boolean.SessionId, p.Boolean.ConfigId
	case p.ValueId != nil:
		sid, id = p.ValueId.SessionId, p.ValueId.ConfigId
	}
	ss, err := s.session(sid)
	if err != nil {
		return sdk.SetSessionConfigOptionResponse{}, err
	}
	c, ok := ss.(Configurable)
	if !ok {
		return sdk.SetSessionConfigOptionResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionSetConfigOption)
	}
	var opt *ConfigOption
	for _, o := range c.ConfigOptions() {
		if o.ID == string(id) {
			opt = &o
		}
	}
	if opt == nil {
		return sdk.SetSessionConfigOptionResponse{}, sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("unknown config option %q", id)})
	}
	v, err := optionValue(*opt, p)
	if err != nil {
		return sdk.SetSessionConfigOptionResponse{}, sdk.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	if err := c.SetConfigOption(ctx, opt.ID, v); err != nil {
		return sdk.SetSessionConfigOptionResponse{}, err
	}
	opts, m := s.settings(ss)
	if opt.ID == OptionApproval && m != nil {
		// Clients that read only modes see the change too.
		s.sessionUpdate(ctx, sid, sdk.SessionUpdate{CurrentModeUpdate: &sdk.SessionCurrentModeUpdate{CurrentModeId: m.CurrentModeId, SessionUpdate: "current_mode_update"}})
	}
	return sdk.SetSessionConfigOptionResponse{ConfigOptions: opts}, nil
}

// SetSessionMode sets the approval policy, the option the modes mirror.
func (s *Server) SetSessionMode(ctx context.Context, p sdk.SetSessionModeRequest) (sdk.SetSessionModeResponse, error) {
	ss, err := s.session(p.SessionId)
	if err != nil {
		return sdk.SetSessionModeResponse{}, err
	}
	c, ok := ss.(Configurable)
	if !ok {
		return sdk.SetSessionModeResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionSetMode)
	}
	mode := string(p.ModeId)
	if mode != "ask" && mode != "auto" {
		return sdk.SetSessionModeResponse{}, sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("unknown mode %q: ask or auto", mode)})
	}
	if err := c.SetConfigOption(ctx, OptionApproval, mode); err != nil {
		return sdk.SetSessionModeResponse{}, err
	}
	// Clients that read config options see the change too.
	opts, _ := s.settings(ss)
	s.sessionUpdate(ctx, p.SessionId, sdk.SessionUpdate{ConfigOptionUpdate: &sdk.SessionConfigOptionUpdate{ConfigOptions: opts, SessionUpdate: "config_option_update"}})
	return sdk.SetSessionModeResponse{}, nil
}

func (s *Server) sessionUpdate(ctx context.Context, id sdk.SessionId, u sdk.SessionUpdate) {
	_ = s.conn.SessionUpdate(ctx, sdk.SessionNotification{SessionId: id, Update: u})
}
